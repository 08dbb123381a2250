/* goruntime_nopark.c - goruntime.c without runtime.gopark. */
#define NOPARK
#include "goruntime.c"
