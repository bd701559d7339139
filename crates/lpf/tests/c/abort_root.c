/* lpf_abort on LPF_ROOT, outside any SPMD section, also exits with status 6. */
#include <lpf/core.h>
#include <lpf/abort.h>
#include "check.h"

int main(void) {
    lpf_abort(LPF_ROOT);
    return 1;
}
