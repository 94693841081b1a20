/*
 * cxx_throw: C++ exceptions thrown and caught through several frames, for the
 * native-frame tests (opened with ctypes).  The profiler must not change how they
 * unwind: libgcc's unwinder, not another one, must run them.
 *
 *     long cxx_throw_catch(long n)   throws and catches n exceptions, each from three
 *                                    frames down; returns how many were caught with the
 *                                    right value
 */
#include <stdexcept>

namespace {

__attribute__((noinline)) void level3(long i)
{
    if (i >= 0)
        throw std::runtime_error(i % 2 ? "odd" : "even");
}

__attribute__((noinline)) void level2(long i)
{
    level3(i);
    asm volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) void level1(long i)
{
    level2(i);
    asm volatile("" ::: "memory");
}

} // namespace

extern "C" __attribute__((visibility("default"))) long cxx_throw_catch(long n)
{
    long ok = 0;
    for (long i = 0; i < n; i++) {
        try {
            level1(i);
        } catch (const std::runtime_error &e) {
            ok += (e.what()[0] == (i % 2 ? 'o' : 'e'));
        }
    }
    return ok;
}
