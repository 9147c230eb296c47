/* A Windows program with a Vulkan device (vulkan-1.dll: Wine's winevulkan over the host's Vulkan) that
 * makes 100 access violations on purpose and resolves them in a vectored exception handler, as Windows
 * programs do (guard pages, probing memory): under Wine each is a SIGSEGV that Wine's handler turns into
 * an exception. Built with MinGW-w64; run with `wine64 vulkan_from_windows.exe`. */
#include <windows.h>
#include <stdio.h>
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

static LONG CALLBACK unprotect(EXCEPTION_POINTERS *e) {
  if (e->ExceptionRecord->ExceptionCode != EXCEPTION_ACCESS_VIOLATION) return EXCEPTION_CONTINUE_SEARCH;
  void *at = (void *)e->ExceptionRecord->ExceptionInformation[1];
  DWORD old;
  if (!VirtualProtect(at, 1, PAGE_READWRITE, &old)) return EXCEPTION_CONTINUE_SEARCH;
  return EXCEPTION_CONTINUE_EXECUTION;
}

int main(void) {
  HMODULE vk = LoadLibraryA("vulkan-1.dll");
  if (!vk) { printf("windows: no vulkan-1.dll\n"); return 1; }
  PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)(void *)GetProcAddress(vk, "vkGetInstanceProcAddr");
  PFN_vkCreateInstance create_instance = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "vulkan-from-windows", .apiVersion = VK_API_VERSION_1_1};
  VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  VkInstance instance;
  if (create_instance(&ici, NULL, &instance) != VK_SUCCESS) { printf("windows: no instance\n"); return 1; }
  PFN_vkEnumeratePhysicalDevices enumerate = (PFN_vkEnumeratePhysicalDevices)gipa(instance, "vkEnumeratePhysicalDevices");
  PFN_vkCreateDevice create_device = (PFN_vkCreateDevice)gipa(instance, "vkCreateDevice");
  PFN_vkDestroyDevice destroy_device = (PFN_vkDestroyDevice)gipa(instance, "vkDestroyDevice");
  PFN_vkDestroyInstance destroy_instance = (PFN_vkDestroyInstance)gipa(instance, "vkDestroyInstance");
  uint32_t count = 1;
  VkPhysicalDevice physical;
  VkResult listed = enumerate(instance, &count, &physical);
  if ((listed != VK_SUCCESS && listed != VK_INCOMPLETE) || count == 0) { printf("windows: no device\n"); return 1; }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueCount = 1, .pQueuePriorities = &priority};
  VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &queue};
  VkDevice device;
  if (create_device(physical, &dci, NULL, &device) != VK_SUCCESS) { printf("windows: no device\n"); return 1; }
  printf("windows: device 0\n");
  fflush(stdout);
  AddVectoredExceptionHandler(1, unprotect);
  int resolved = 0;
  for (int i = 0; i < 100; i++) {
    volatile int *page = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_NOACCESS);
    *page = i;
    resolved += *page == i;
    VirtualFree((void *)page, 0, MEM_RELEASE);
  }
  printf("windows: %d access violations resolved\n", resolved);
  destroy_device(device, NULL);
  destroy_instance(instance, NULL);
  printf("windows: done\n");
  return 0;
}
