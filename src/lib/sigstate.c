/*
 * sigstate: the one definition of the handler's state (sigstate.h says who sets it up
 * and who reads it).  Zero until sampler_start fills it in: `enabled` 0, so a signal
 * that arrives before then does nothing.
 */
#include "sigstate.h"

sighandler_state sighandler_g;
