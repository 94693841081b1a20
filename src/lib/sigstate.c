/*
 * sigstate: the signal path's state (sigstate.h).  Data only.
 */
#include "sigstate.h"

sighandler_state sighandler_g;
