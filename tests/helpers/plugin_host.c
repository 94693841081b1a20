/*
 * plugin_host: an application server in miniature, for the integration tests.
 *
 *     plugin_host PLUGIN.so SCRIPT [ARGS...]
 *
 * It does not link libpython.  After start it loads PLUGIN.so (embed_host.c built with
 * -DEMBED_PLUGIN, which links libpython) with dlopen(RTLD_NOW | RTLD_LOCAL), so neither
 * the plugin's nor libpython's symbols are visible globally, and calls its
 * embed_plugin_main(SCRIPT, ARGS...), which initializes Python, runs SCRIPT and finalizes.
 * Exits with what that returns.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PLUGIN.so SCRIPT [ARGS...]\n", argv[0]);
        return 2;
    }
    void *plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!plugin) {
        fprintf(stderr, "plugin_host: %s\n", dlerror());
        return 2;
    }
    int (*run)(int, char **) = (int (*)(int, char **))dlsym(plugin, "embed_plugin_main");
    if (!run) {
        fprintf(stderr, "plugin_host: %s\n", dlerror());
        return 2;
    }
    return run(argc - 1, argv + 1);
}
