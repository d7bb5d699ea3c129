// RUN: not accel-opt %s -accel-blocked-layout="max-taps=0" 2>&1 | FileCheck %s --check-prefix=TAPS
// RUN: not accel-opt %s -accel-blocked-layout="pointwise=maybe" 2>&1 | FileCheck %s --check-prefix=BOOL

// Options out of range or of the wrong type are refused in one line, naming the valid ones.
// TAPS: error: pass 'accel-blocked-layout': min-flops must not be negative, max-taps at least 1; valid options: min_flops: int = 65536; max_taps: int = 256; pointwise: bool = false
// BOOL: error: pass 'accel-blocked-layout': bad value 'maybe' for option 'pointwise' (expected bool)
func.func @f() {
  return
}
