func.func @main(%a: f32) -> f32 {
  %0 = foo.bar %a : f32
  return %0 : f32
}
