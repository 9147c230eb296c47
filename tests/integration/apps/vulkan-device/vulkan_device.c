/* The native half of VulkanFromJava (through JNI, built with -DBB_JNI), VulkanFromCSharp (P/Invoke) and
 * fork_child_crash.c: a Vulkan instance and device made through the loader (so any layer the environment
 * enables), and native crashes for the tests of a runtime that gives up on a fault. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <vulkan/vulkan.h>

static VkInstance instance;
static VkDevice device;

int bb_create_device(void) {
  VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "vulkan-device",
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

void bb_destroy_device(void) {
  vkDestroyDevice(device, NULL);
  vkDestroyInstance(instance, NULL);
}

/* A store to address 0x10 in native code, which the JVM's handler does not resolve. */
void bb_crash(void) {
  volatile int *bad = (volatile int *)0x10;
  *bad = 1;
}

/* The same store from code of no loaded object, as a JIT makes (lavapipe's shaders are such code): the
 * JVM's handler decides on it first. x86-64: mov dword [0x18], 1; ret. */
void bb_crash_in_generated_code(void) {
#if defined(__x86_64__)
  static const unsigned char code[] = {0xc7, 0x04, 0x25, 0x18, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0xc3};
  void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return;
  memcpy(page, code, sizeof code);
  ((void (*)(void))page)();
#else
  volatile int *bad = (volatile int *)0x18;
  *bad = 1;
#endif
}

#ifdef BB_JNI
#include <jni.h>

JNIEXPORT jint JNICALL Java_VulkanFromJava_createDevice(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  return bb_create_device();
}

JNIEXPORT void JNICALL Java_VulkanFromJava_destroyDevice(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  bb_destroy_device();
}

JNIEXPORT void JNICALL Java_VulkanFromJava_crash(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  bb_crash();
}

JNIEXPORT void JNICALL Java_VulkanFromJava_crashInGeneratedCode(JNIEnv *env, jclass cls) {
  (void)env, (void)cls;
  bb_crash_in_generated_code();
}
#endif
