// RUN: not accel-opt %s -accel-pool-taps="max-taps=0" 2>&1 | FileCheck %s --check-prefix=TAPS
// RUN: not accel-opt %s -accel-pool-taps="max-taps=many" 2>&1 | FileCheck %s --check-prefix=INT

// Options out of range or of the wrong type are refused in one line, naming the valid ones.
// TAPS: error: pass 'accel-pool-taps': max-taps must be at least 1; valid options: max_taps: int = 25
// INT: error: pass 'accel-pool-taps': bad value 'many' for option 'max_taps' (expected int)
func.func @f() {
  return
}
