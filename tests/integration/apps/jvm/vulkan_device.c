/* The native half of VulkanFromJava: a Vulkan instance and device made through JNI (the loader, so any
 * layer the environment enables), and a native crash for the test of a JVM that gives up on a fault. */
#include <jni.h>
#include <stdio.h>
#include <vulkan/vulkan.h>

static VkInstance instance;
static VkDevice device;

JNIEXPORT jint JNICALL Java_VulkanFromJava_createDevice(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vulkan-from-java",
      .apiVersion = VK_API_VERSION_1_3,
  };
  VkInstanceCreateInfo instance_info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .pApplicationInfo = &app,
  };
  if (vkCreateInstance(&instance_info, NULL, &instance) != VK_SUCCESS) return 1;
  uint32_t count = 1;
  VkPhysicalDevice physical;
  VkResult listed = vkEnumeratePhysicalDevices(instance, &count, &physical);
  if ((listed != VK_SUCCESS && listed != VK_INCOMPLETE) || count == 0) return 2;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = 0,
      .queueCount = 1,
      .pQueuePriorities = &priority,
  };
  VkDeviceCreateInfo device_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &queue,
  };
  if (vkCreateDevice(physical, &device_info, NULL, &device) != VK_SUCCESS) return 3;
  return 0;
}

JNIEXPORT void JNICALL Java_VulkanFromJava_destroyDevice(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  vkDestroyDevice(device, NULL);
  vkDestroyInstance(instance, NULL);
}

/* A store to address 0x10 in native code, which the JVM's handler does not resolve. */
JNIEXPORT void JNICALL Java_VulkanFromJava_crash(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  volatile int *bad = (volatile int *)0x10;
  *bad = 1;
}
