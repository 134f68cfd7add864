# Fails the build when MODULE carries its own copy of libstdc++'s internals
# (a compiler that links libstdc++ statically into shared objects, such as a
# GCC configured with --disable-shared or a static-libstdc++ spec). torch's
# libraries use the shared libstdc++.so, and a second, private copy in the
# extension breaks iostreams: the first `std::ostringstream << long` in
# smelt._C crashed with SIGSEGV on such a machine.
# Usage: cmake -DMODULE=<file> -DNM=<nm> -DCOMPILER=<c++> -P check_shared_libstdcxx.cmake
execute_process(COMMAND "${NM}" "${MODULE}" OUTPUT_VARIABLE symbols ERROR_QUIET RESULT_VARIABLE nm_failed)
if(nm_failed)
  message(WARNING "cannot read the symbols of ${MODULE} with ${NM}; libstdc++ linkage not checked")
  return()
endif()
# libstdc++'s locale facet shims exist only inside libstdc++ itself.
string(FIND "${symbols}" "__facet_shims" found)
if(NOT found EQUAL -1)
  message(FATAL_ERROR
    "${MODULE} contains a private copy of libstdc++ (its facet shims): the C++ compiler "
    "${COMPILER} links libstdc++ statically into shared objects, while torch uses "
    "libstdc++.so, and the two copies crash at the first stream output. Configure with a "
    "compiler that links libstdc++.so, e.g. CXX=/usr/bin/g++ in a fresh build directory.")
endif()
