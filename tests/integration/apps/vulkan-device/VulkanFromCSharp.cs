// A C# program with a Vulkan device (made through P/Invoke, vulkan_device.c), then C# code that makes Mono
// fault on purpose and resolve the faults in its own signal handler: its compiled code reads through a
// null reference where C# throws NullReferenceException. `crash` ends with a fault in native code instead,
// `crash-generated` with one in code of no loaded object, which Mono does not resolve: it prints its
// native crash report and aborts.
//
//   LD_LIBRARY_PATH=DIR mono VulkanFromCSharp.exe [crash | crash-generated]
using System;
using System.Runtime.InteropServices;

class VulkanFromCSharp {
  [DllImport("vulkan_device")] static extern int bb_create_device();
  [DllImport("vulkan_device")] static extern void bb_destroy_device();
  [DllImport("vulkan_device")] static extern void bb_crash();
  [DllImport("vulkan_device")] static extern void bb_crash_in_generated_code();

  sealed class Box {
    public int Value = 3;
  }

  // Compiled with an implicit null check: a read at a small address that Mono's handler turns into a
  // NullReferenceException.
  static int Read(Box box) {
    return box.Value;
  }

  static int Main(string[] args) {
    int created = bb_create_device();
    Console.WriteLine("csharp: device " + created);
    if (created != 0) {
      return 1;
    }
    if (args.Length > 0 && args[0] == "crash") {
      bb_crash();
    }
    if (args.Length > 0 && args[0] == "crash-generated") {
      bb_crash_in_generated_code();
    }
    var box = new Box();
    long nulls = 0, sum = 0;
    for (int i = 0; i < 200000; i++) {
      try {
        sum += Read(i % 1000 == 0 ? null : box);
      } catch (NullReferenceException) {
        nulls++;
      }
    }
    Console.WriteLine("csharp: " + nulls + " null reference exceptions, sum " + sum);
    bb_destroy_device();
    Console.WriteLine("csharp: done");
    return 0;
  }
}
