// A Java program with a Vulkan device (made through JNI, vulkan_device.c), then Java code that makes the
// JVM fault on purpose and resolve the faults in its own signal handler: compiled code reads through a
// null reference where Java throws NullPointerException, and every safepoint (each garbage collection)
// reaches compiled code through a protected polling page. `crash` ends with a fault in native code
// instead, `crash-generated` with one in code of no loaded object (as a JIT's, or lavapipe's shaders),
// which the JVM does not resolve: it writes its hs_err file and aborts.
//
//   java -Djava.library.path=DIR VulkanFromJava [crash | crash-generated]
public class VulkanFromJava {
  static native int createDevice();
  static native void destroyDevice();
  static native void crash();
  static native void crashInGeneratedCode();

  static final class Box {
    int value = 3;
  }

  // Compiled with an implicit null check: a read at a small address that the JVM's handler turns into a
  // NullPointerException.
  static int read(Box box) {
    return box.value;
  }

  public static void main(String[] args) {
    System.loadLibrary("vulkan_device");
    int created = createDevice();
    System.out.println("java: device " + created);
    if (created != 0) {
      System.exit(1);
    }
    if (args.length > 0 && args[0].equals("crash")) {
      crash();
    }
    if (args.length > 0 && args[0].equals("crash-generated")) {
      crashInGeneratedCode();
    }
    Box box = new Box();
    long nulls = 0, sum = 0;
    for (int i = 0; i < 2_000_000; i++) {
      try {
        sum += read(i % 1000 == 0 ? null : box);
      } catch (NullPointerException e) {
        nulls++;
      }
      if (i % 1000 == 0) {
        byte[] garbage = new byte[1 << 16];
        sum += garbage.length;
      }
    }
    System.gc();
    System.out.println("java: " + nulls + " null pointer exceptions, sum " + sum);
    destroyDevice();
    System.out.println("java: done");
  }
}
