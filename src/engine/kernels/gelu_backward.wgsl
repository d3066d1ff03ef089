// gelu_backward: the gradient through bias_act.wgsl's activations, from the pre-activation v
// (fc1's output with its bias) and dL/dy:  dv = dy · act'(v), in place over dy.
// ACT 1 = tanh GELU (gelu_pytorch_tanh, the vision blocks' MLP), u = c·(v + 0.044715·v³), c = √(2/π):
//   act'(v) = ½(1 + tanh u) + ½·v·(1 − tanh² u)·c·(1 + 3·0.044715·v²)
// ACT 2 = exact GELU v·Φ(v) (the merger's nn.GELU()):  act'(v) = Φ(v) + v·φ(v),
//   Φ(v) = ½(1 + erf(v/√2)), φ(v) = exp(−v²/2)/√(2π); erf as bias_act.wgsl's (A&S 7.1.26, < 1.5e-7).
const ACT: u32 = {{ACT}}u;

struct Params { count: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> pre: array<f32>;      // (rows, n) act's input
@group(0) @binding(2) var<storage, read_write> dy: array<f32>; // (rows, n) dL/d act(v) in, dL/dv out

fn tanh_safe(u: f32) -> f32 {
  let e = exp(-2.0 * abs(u));
  return sign(u) * (1.0 - e) / (1.0 + e);
}

fn erf_approx(x: f32) -> f32 {
  let a = abs(x);
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-a * a));
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let idx = gid.x + gid.y * 65535u * 64u;
  if (idx >= p.count) { return; }
  let v = pre[idx];
  var d = 1.0;
  if (ACT == 1u) {
    let c = 0.7978845608028654;
    let t = tanh_safe(c * (v + 0.044715 * v * v * v));
    d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * v * v);
  } else if (ACT == 2u) {
    d = 0.5 * (1.0 + erf_approx(v * 0.7071067811865476)) + v * exp(-0.5 * v * v) * 0.3989422804014327;
  }
  dy[idx] = dy[idx] * d;
}
