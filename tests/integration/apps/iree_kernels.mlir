// Kernels for tests/integration/tests/iree.rs, compiled to SPIR-V by IREE's compiler: a row softmax
// (subgroup reductions), a 64x64 matmul (workgroup memory and barriers), an elementwise
// sqrt(log(a) / b), whose log IREE expands itself (a polynomial, with NaN chosen where a < 0 and -Inf where
// a == 0), atan2(a, b), whose expansion divides 0 by 0 where both are 0, pow(a, b), expanded as
// exp(b * log(a)): its log(0) is -Inf on the way to pow(0, b) = 0, acos, log1p and rsqrt, NaN outside
// their domains, each expanded its own way, and exp(60 a), whose expansion scales a polynomial by a power
// of two built from its bits, Inf where the product overflows (a past about 1.48), and expm1(a), whose
// expansion divides 0 by 0 where a is 0 and a select throws that NaN away.
func.func @softmax(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %empty = tensor.empty() : tensor<4x64xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x64xf32>) outs(%empty : tensor<4x64xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
func.func @matmul(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
func.func @elementwise(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %l = math.log %x : f32
    %d = arith.divf %l, %y : f32
    %s = math.sqrt %d : f32
    linalg.yield %s : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @atan2(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = math.atan2 %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @pow(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = math.powf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @acos(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = math.acos %x : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @log1p(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = math.log1p %x : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @rsqrt(%a: tensor<1024xf32>, %b: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<1024xf32>, tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = math.rsqrt %x : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @exp(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %c = arith.constant 60.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %c : f32
    %q = math.exp %m : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
func.func @expm1(%a: tensor<1024xf32>) -> tensor<1024xf32> {
  %e = tensor.empty() : tensor<1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %q = math.expm1 %x : f32
    linalg.yield %q : f32
  } -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}
