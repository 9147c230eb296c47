// VkFFT (Debian 12's libvkfft-dev, 1.2.26) on the first Vulkan device: the app of
// tests/integration/tests/vkfft.rs. VkFFT writes GLSL for each plan at run time and compiles it with
// glslang into compute shaders of its own shape (radix kernels, the four-step algorithm's transposes,
// double precision with tables): shader code nobody here wrote.
//
// Each case (all, or those named on the command line) makes a plan, fills the buffer with the same
// pseudo-random values, runs the forward transform, compares it with a DFT computed on the CPU in double
// precision, runs the inverse and compares the round trip with the input (the DCTs: the round trip
// alone). It prints, per case,
//   result <case> checksum <FNV-1a of the buffer after both transforms> forward <error> roundtrip <error>
// (errors relative to the largest value), and exits 1 when an error is past the precision's bound, 2 when
// Vulkan or VkFFT fails.
//
// Build: gcc -I DIR vkfft_app.c -o vkfft_app -lvulkan -lglslang -lMachineIndependent -lOSDependent
// -lGenericCodeGen -lOGLCompiler -lSPIRV -lglslang-default-resource-limits -lSPIRV-Tools-opt -lSPIRV-Tools
// -lstdc++ -lm -lpthread, DIR holding a copy of vkFFT.h whose three `VkCommandBuffer commandBuffer = {};`
// (C++, an error in C before C23) read `= VK_NULL_HANDLE;` (vkfft.rs makes it).

#define VKFFT_BACKEND 0
#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

// VkFFT 1.2.26 spells out glslang's resource limits in the field order of an older glslang: against Debian
// 12's glslang (11.13), whose structure has the mesh shader fields before the limits, the limits come out
// zero, and glslang then rejects every indexing by a variable ("Non-constant-index-expression"). The three
// calls that read them get glslang's own defaults instead.
static glslang_input_t with_default_limits(const glslang_input_t *input) {
    glslang_input_t fixed = *input;
    fixed.resource = glslang_default_resource();
    return fixed;
}
static glslang_shader_t *shader_create(const glslang_input_t *input) {
    glslang_input_t fixed = with_default_limits(input);
    return glslang_shader_create(&fixed);
}
static int shader_preprocess(glslang_shader_t *shader, const glslang_input_t *input) {
    glslang_input_t fixed = with_default_limits(input);
    return glslang_shader_preprocess(shader, &fixed);
}
static int shader_parse(glslang_shader_t *shader, const glslang_input_t *input) {
    glslang_input_t fixed = with_default_limits(input);
    return glslang_shader_parse(shader, &fixed);
}
#define glslang_shader_create shader_create
#define glslang_shader_preprocess shader_preprocess
#define glslang_shader_parse shader_parse
#include <vkFFT.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                       \
    do {                                                                                                  \
        VkResult r_ = (call);                                                                             \
        if (r_ != VK_SUCCESS) {                                                                           \
            fprintf(stderr, "vkfft-app: %s failed: %d\n", #call, r_);                                     \
            exit(2);                                                                                      \
        }                                                                                                 \
    } while (0)

struct gpu {
    VkInstance instance;
    VkPhysicalDevice physical;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkFence fence;
    int has_f64;
};

static void open_gpu(struct gpu *g) {
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkfft-app";
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    CHECK(vkCreateInstance(&ici, NULL, &g->instance));
    uint32_t count = 1;
    VkResult r = vkEnumeratePhysicalDevices(g->instance, &count, &g->physical);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0) {
        fprintf(stderr, "vkfft-app: no Vulkan device\n");
        exit(2);
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(g->physical, &props);
    printf("device %s\n", props.deviceName);
    VkPhysicalDeviceFeatures supported;
    vkGetPhysicalDeviceFeatures(g->physical, &supported);
    g->has_f64 = supported.shaderFloat64;

    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(g->physical, &families, NULL);
    VkQueueFamilyProperties *fp = (VkQueueFamilyProperties *)calloc(families, sizeof *fp);
    vkGetPhysicalDeviceQueueFamilyProperties(g->physical, &families, fp);
    uint32_t family = UINT32_MAX;
    for (uint32_t i = 0; i < families; i++)
        if (fp[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            family = i;
            break;
        }
    free(fp);
    if (family == UINT32_MAX) {
        fprintf(stderr, "vkfft-app: no compute queue\n");
        exit(2);
    }
    float priority = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueFamilyIndex = family;
    qci.queueCount = 1;
    qci.pQueuePriorities = &priority;
    VkPhysicalDeviceFeatures features = {0};
    features.shaderFloat64 = supported.shaderFloat64;
    features.shaderInt64 = supported.shaderInt64;
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    dci.queueCreateInfoCount = 1;
    dci.pQueueCreateInfos = &qci;
    dci.pEnabledFeatures = &features;
    CHECK(vkCreateDevice(g->physical, &dci, NULL, &g->device));
    vkGetDeviceQueue(g->device, family, 0, &g->queue);
    VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = family;
    CHECK(vkCreateCommandPool(g->device, &pci, NULL, &g->pool));
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK(vkCreateFence(g->device, &fci, NULL, &g->fence));
}

// One storage buffer in host-visible, coherent memory: the data goes in and out through a mapping.
struct buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *mapped;
    uint64_t size;
};

static struct buffer make_buffer(struct gpu *g, uint64_t size) {
    struct buffer b = {0};
    b.size = size;
    VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = size;
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    CHECK(vkCreateBuffer(g->device, &bci, NULL, &b.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, b.buffer, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(g->physical, &mp);
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) {
            type = i;
            break;
        }
    if (type == UINT32_MAX) {
        fprintf(stderr, "vkfft-app: no host-visible memory\n");
        exit(2);
    }
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    CHECK(vkAllocateMemory(g->device, &mai, NULL, &b.memory));
    CHECK(vkBindBufferMemory(g->device, b.buffer, b.memory, 0));
    CHECK(vkMapMemory(g->device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped));
    return b;
}

static void free_buffer(struct gpu *g, struct buffer *b) {
    vkUnmapMemory(g->device, b->memory);
    vkDestroyBuffer(g->device, b->buffer, NULL);
    vkFreeMemory(g->device, b->memory, NULL);
}

// Records one transform of `app` and waits for it.
static void run_transform(struct gpu *g, VkFFTApplication *app, int inverse) {
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = g->pool;
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    CHECK(vkAllocateCommandBuffers(g->device, &cai, &cmd));
    VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    CHECK(vkBeginCommandBuffer(cmd, &begin));
    VkFFTLaunchParams launch = {0};
    launch.commandBuffer = &cmd;
    VkFFTResult res = VkFFTAppend(app, inverse, &launch);
    if (res != VKFFT_SUCCESS) {
        fprintf(stderr, "vkfft-app: VkFFTAppend failed: %d\n", res);
        exit(2);
    }
    // The host reads the result through the mapping.
    VkMemoryBarrier to_host = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                         &to_host, 0, NULL, 0, NULL);
    CHECK(vkEndCommandBuffer(cmd));
    VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    CHECK(vkQueueSubmit(g->queue, 1, &submit, g->fence));
    CHECK(vkWaitForFences(g->device, 1, &g->fence, VK_TRUE, UINT64_MAX));
    CHECK(vkResetFences(g->device, 1, &g->fence));
    vkFreeCommandBuffers(g->device, g->pool, 1, &cmd);
}

// The plan of `config` (its sizes and kind set) on `g`, normalized, over `buf` of `*bytes`; exits on failure.
static VkFFTApplication plan(struct gpu *g, VkFFTConfiguration *config, struct buffer *buf, uint64_t *bytes,
                             const char *name) {
    config->normalize = 1;
    config->physicalDevice = &g->physical;
    config->device = &g->device;
    config->queue = &g->queue;
    config->commandPool = &g->pool;
    config->fence = &g->fence;
    config->isCompilerInitialized = 1;
    config->buffer = &buf->buffer;
    config->bufferSize = bytes;
    VkFFTApplication app = {0};
    VkFFTResult res = initializeVkFFT(&app, *config);
    if (res != VKFFT_SUCCESS) {
        fprintf(stderr, "vkfft-app: %s: initializeVkFFT failed: %d\n", name, res);
        exit(2);
    }
    return app;
}

// A transform to run: its sizes (x fastest), complex-to-complex or real-to-complex, and its precision.
struct fft_case {
    const char *name;
    uint64_t dims, size[3], batches;
    int r2c, f64;
};

static uint64_t rng_state;
static double next_value(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

// The DFT of the complex rows of `data` (count rows of n, stride between elements, dist between rows),
// forward (e^-2pi i jk/n), in place, in double precision on the CPU. Sequences longer than 4096 get every
// 257th bin only (the others NaN, not compared): the whole of 65,536 would be 4 G products.
static void dft_rows(double *re, double *im, uint64_t n, uint64_t count, uint64_t stride, uint64_t dist) {
    double *ore = (double *)malloc(n * sizeof *ore), *oim = malloc(n * sizeof *oim);
    double *wc = (double *)malloc(n * sizeof *wc), *ws = malloc(n * sizeof *ws);
    for (uint64_t j = 0; j < n; j++) {
        wc[j] = cos(-2.0 * M_PI * (double)j / (double)n);
        ws[j] = sin(-2.0 * M_PI * (double)j / (double)n);
    }
    uint64_t step = n > 4096 ? 257 : 1;
    for (uint64_t row = 0; row < count; row++) {
        double *r = re + row * dist, *i = im + row * dist;
        for (uint64_t k = 0; k < n; k++) {
            ore[k] = oim[k] = NAN;
            if (k % step) continue;
            double sr = 0, si = 0;
            for (uint64_t j = 0, w = 0; j < n; j++, w = (w + k) % n) {
                sr += r[j * stride] * wc[w] - i[j * stride] * ws[w];
                si += r[j * stride] * ws[w] + i[j * stride] * wc[w];
            }
            ore[k] = sr;
            oim[k] = si;
        }
        for (uint64_t k = 0; k < n; k++) {
            r[k * stride] = ore[k];
            i[k * stride] = oim[k];
        }
    }
    free(ore);
    free(oim);
    free(wc);
    free(ws);
}

// FNV-1a over bytes.
static uint64_t fnv(const void *data, uint64_t len, uint64_t h) {
    const unsigned char *p = (const unsigned char *)data;
    for (uint64_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

// Runs one case; returns 0 when its errors are within the precision's bound.
static int run_case(struct gpu *g, const struct fft_case *c) {
    uint64_t nx = c->size[0], ny = c->dims > 1 ? c->size[1] : 1, nz = c->dims > 2 ? c->size[2] : 1;
    // Complex elements per row in the buffer: R2C works in place on rows padded to nx/2+1 complex values.
    uint64_t row = c->r2c ? nx / 2 + 1 : nx;
    uint64_t complex_count = row * ny * nz * c->batches;
    uint64_t scalar = c->f64 ? 8 : 4;
    uint64_t bytes = complex_count * 2 * scalar;
    struct buffer buf = make_buffer(g, bytes);

    VkFFTConfiguration config = {0};
    config.FFTdim = c->dims;
    config.size[0] = nx;
    config.size[1] = ny;
    config.size[2] = nz;
    config.numberBatches = c->batches;
    config.performR2C = c->r2c;
    config.doublePrecision = c->f64;
    VkFFTApplication app = plan(g, &config, &buf, &bytes, c->name);

    // The input, as doubles, in the buffer's layout (R2C: real values, nx to a row of 2*row scalars).
    uint64_t scalars = complex_count * 2;
    double *input = (double *)calloc(scalars, sizeof(double));
    rng_state = 0x5eed0000u + (uint64_t)c->size[0];
    uint64_t rows = ny * nz * c->batches;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t x = 0; x < (c->r2c ? nx : 2 * nx); x++) input[r * 2 * row + x] = next_value();
    for (uint64_t i = 0; i < scalars; i++) {
        if (c->f64)
            ((double *)buf.mapped)[i] = input[i];
        else
            ((float *)buf.mapped)[i] = (float)input[i];
    }
    // What the device computes from: the input rounded to its precision.
    for (uint64_t i = 0; i < scalars; i++)
        if (!c->f64) input[i] = (float)input[i];

    run_transform(g, &app, -1);
    uint64_t checksum = fnv(buf.mapped, bytes, 14695981039346656037ull);
    double *out = (double *)malloc(scalars * sizeof(double));
    for (uint64_t i = 0; i < scalars; i++)
        out[i] = c->f64 ? ((double *)buf.mapped)[i] : ((float *)buf.mapped)[i];

    // The reference: a DFT along each axis. R2C rows become the nx/2+1 first bins of their complex DFT.
    double *re = (double *)calloc(nx * ny * nz * c->batches, sizeof(double));
    double *im = (double *)calloc(nx * ny * nz * c->batches, sizeof(double));
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t x = 0; x < nx; x++) {
            re[r * nx + x] = c->r2c ? input[r * 2 * row + x] : input[r * 2 * row + 2 * x];
            im[r * nx + x] = c->r2c ? 0.0 : input[r * 2 * row + 2 * x + 1];
        }
    dft_rows(re, im, nx, rows, 1, nx);
    for (uint64_t b = 0; b < nz * c->batches && ny > 1; b++)
        dft_rows(re + b * nx * ny, im + b * nx * ny, ny, nx, nx, 1);
    for (uint64_t b = 0; b < c->batches && nz > 1; b++)
        dft_rows(re + b * nx * ny * nz, im + b * nx * ny * nz, nz, nx * ny, nx * ny, 1);
    double largest = 0, forward = 0;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t x = 0; x < row; x++) {
            if (isnan(re[r * nx + x])) continue; // a bin the reference skipped
            double dr = out[r * 2 * row + 2 * x] - re[r * nx + x];
            double di = out[r * 2 * row + 2 * x + 1] - im[r * nx + x];
            largest = fmax(largest, hypot(re[r * nx + x], im[r * nx + x]));
            forward = fmax(forward, hypot(dr, di));
        }
    forward /= largest;

    run_transform(g, &app, 1);
    checksum = fnv(buf.mapped, bytes, checksum);
    double roundtrip = 0, input_largest = 0;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t x = 0; x < (c->r2c ? nx : 2 * nx); x++) {
            uint64_t i = r * 2 * row + x;
            double v = c->f64 ? ((double *)buf.mapped)[i] : ((float *)buf.mapped)[i];
            roundtrip = fmax(roundtrip, fabs(v - input[i]));
            input_largest = fmax(input_largest, fabs(input[i]));
        }
    roundtrip /= input_largest;

    double bound = c->f64 ? 1e-12 : 1e-4;
    int bad = !(forward <= bound) || !(roundtrip <= bound);
    printf("result %s checksum %016llx forward %.3g roundtrip %.3g%s\n", c->name,
           (unsigned long long)checksum, forward, roundtrip, bad ? " PAST THE BOUND" : "");
    fflush(stdout);
    deleteVkFFT(&app);
    free_buffer(g, &buf);
    free(input);
    free(out);
    free(re);
    free(im);
    return bad;
}

// A real-to-real transform: a DCT of `type` (1-4) over `size` (x fastest), in single precision.
struct dct_case {
    const char *name;
    uint64_t dims, size[2];
    int type;
};

// Runs one DCT and its inverse (VkFFT's DCT-II's inverse is DCT-III, and so on), and checks the round trip
// against the input: VkFFT's DCTs carry scale factors of their own, so the forward transform is not
// compared with a CPU reference. Returns 0 when the round trip is within the bound.
static int run_dct_case(struct gpu *g, const struct dct_case *c) {
    uint64_t n = c->size[0] * (c->dims > 1 ? c->size[1] : 1);
    uint64_t bytes = n * sizeof(float);
    struct buffer buf = make_buffer(g, bytes);
    VkFFTConfiguration config = {0};
    config.FFTdim = c->dims;
    config.size[0] = c->size[0];
    config.size[1] = c->dims > 1 ? c->size[1] : 1;
    config.size[2] = 1;
    config.performDCT = (uint64_t)c->type;
    VkFFTApplication app = plan(g, &config, &buf, &bytes, c->name);
    float *input = (float *)malloc(bytes);
    rng_state = 0xdc70000u + n;
    for (uint64_t i = 0; i < n; i++) {
        input[i] = (float)next_value();
        ((float *)buf.mapped)[i] = input[i];
    }
    run_transform(g, &app, -1);
    uint64_t checksum = fnv(buf.mapped, bytes, 14695981039346656037ull);
    run_transform(g, &app, 1);
    checksum = fnv(buf.mapped, bytes, checksum);
    double roundtrip = 0, largest = 0;
    for (uint64_t i = 0; i < n; i++) {
        roundtrip = fmax(roundtrip, fabs(((float *)buf.mapped)[i] - input[i]));
        largest = fmax(largest, fabs(input[i]));
    }
    roundtrip /= largest;
    int bad = !(roundtrip <= 1e-4);
    printf("result %s checksum %016llx roundtrip %.3g%s\n", c->name, (unsigned long long)checksum,
           roundtrip, bad ? " PAST THE BOUND" : "");
    fflush(stdout);
    deleteVkFFT(&app);
    free_buffer(g, &buf);
    free(input);
    return bad;
}

int main(int argc, char **argv) {
    static const struct fft_case cases[] = {
        // Radix 2, 4 and 8 (Stockham in shared memory), a batch of 4.
        {"c2c-1024x4", 1, {1024}, 4, 0, 0},
        // Radix 3, 5, 7, 11 and 13 in one sequence.
        {"c2c-15015", 1, {15015}, 1, 0, 0},
        // Real to complex in place, two dimensions, its strided second axis.
        {"r2c-256x96", 2, {256, 96}, 1, 1, 0},
        // Past one workgroup's shared memory: the four-step algorithm, its transposes through a temp buffer.
        {"c2c-65536-four-step", 1, {65536}, 1, 0, 0},
        // Three dimensions.
        {"c2c-32x16x12", 3, {32, 16, 12}, 1, 0, 0},
        // Double precision: twiddles from tables VkFFT computes on the CPU.
        {"c2c-f64-2048", 1, {2048}, 1, 0, 1},
    };
    // The four DCT types (real to real), each a plan of its own shape.
    static const struct dct_case dct_cases[] = {
        {"dct1-129", 1, {129}, 1},
        {"dct2-512", 1, {512}, 2},
        {"dct3-256x64", 2, {256, 64}, 3},
        {"dct4-1000", 1, {1000}, 4},
    };
    struct gpu g = {0};
    open_gpu(&g);
    if (!glslang_initialize_process()) {
        fprintf(stderr, "vkfft-app: glslang_initialize_process failed\n");
        return 2;
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct fft_case *c = &cases[i];
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], c->name) == 0;
        if (!wanted) continue;
        if (c->f64 && !g.has_f64) {
            printf("skip %s: the device has no shaderFloat64\n", c->name);
            continue;
        }
        failed |= run_case(&g, c);
    }
    for (size_t i = 0; i < sizeof dct_cases / sizeof dct_cases[0]; i++) {
        const struct dct_case *c = &dct_cases[i];
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++) wanted |= strcmp(argv[a], c->name) == 0;
        if (wanted) failed |= run_dct_case(&g, c);
    }
    glslang_finalize_process();
    vkDestroyFence(g.device, g.fence, NULL);
    vkDestroyCommandPool(g.device, g.pool, NULL);
    vkDestroyDevice(g.device, NULL);
    vkDestroyInstance(g.instance, NULL);
    return failed;
}
