/* Calls the AOT-compiled model `mlp` (see Makefile and docs/aot.md).
 *
 *   ./main                      run on a fixed input pattern, print the outputs
 *   ./main in.bin out.bin       read the input (float32, row-major) from in.bin and write
 *                               the outputs (float32) to out.bin
 */
#include <stdio.h>
#include <stdlib.h>

#include "mlp.h"

static float input[MLP_IN0_ELEMENTS];
static float output[MLP_OUT0_ELEMENTS];

int main(int argc, char **argv) {
  if (argc == 3) {
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(input, sizeof input, 1, f) != 1) {
      fprintf(stderr, "cannot read %zu bytes from %s\n", sizeof input, argv[1]);
      return 2;
    }
    fclose(f);
  } else {
    for (int i = 0; i < MLP_IN0_ELEMENTS; ++i) input[i] = (float)((i % 17) - 8) / 8.0f;
  }

  int status = mlp(input, output);
  if (status != 0) {
    fprintf(stderr, "mlp failed (%d): %s\n", status, mlp_last_error());
    return 1;
  }

  if (argc == 3) {
    FILE *f = fopen(argv[2], "wb");
    if (!f || fwrite(output, sizeof output, 1, f) != 1) {
      fprintf(stderr, "cannot write %s\n", argv[2]);
      return 2;
    }
    fclose(f);
  } else {
    for (int i = 0; i < MLP_OUT0_ELEMENTS; ++i) printf("%g%c", output[i], i % 10 == 9 ? '\n' : ' ');
  }
  return 0;
}
