// doctest's own main for the single-process unit tests; compiled once and
// linked into every unit test executable.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
