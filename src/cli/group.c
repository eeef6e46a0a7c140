#include "cli.h"
int cmd_group(int argc, char **argv) { (void) argc; (void) argv; cli_error("not yet"); }
