# The installed package, as a user gets it (issue 31): `cmake --install` of this
# build into a fresh prefix, then the consumer in tests/install/consumer (the
# issue's example, verbatim) configured with find_package(tessera), built and
# run; it must print "ok". Also checks the installed files and that the public
# header includes no internal header.
# With -DAOT_EXAMPLE=ON, also builds examples/aot_cpp against the prefix (tessera::cli).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... [-DLAUNCHER=...] [-DAOT_EXAMPLE=ON] -P check_install.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_install.cmake: -D${var}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(f include/tessera/tessera.h lib/libtessera.so bin/tessera
          lib/cmake/tessera/tesseraConfig.cmake lib/cmake/tessera/tesseraConfigVersion.cmake
          lib/cmake/tessera/tesseraTargets.cmake lib/pkgconfig/tessera.pc
          share/tessera/kernels/manifest.txt share/tessera/kernels/vector_add.py) # `tessera aot` with no manifest
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
file(GLOB_RECURSE headers RELATIVE ${prefix}/include ${prefix}/include/*)
if(NOT headers STREQUAL "tessera/tessera.h")
  message(FATAL_ERROR "installed headers: ${headers}; expected only tessera/tessera.h")
endif()
file(STRINGS ${prefix}/include/tessera/tessera.h quoted_includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
if(quoted_includes)
  message(FATAL_ERROR "the public header includes tessera's own headers: ${quoted_includes}")
endif()

# The CLI runs from the prefix (its RPATH finds lib/libtessera.so).
run("installed tessera --version" ${prefix}/bin/tessera --version)
if(NOT run_output MATCHES "^tessera ")
  message(FATAL_ERROR "installed tessera --version printed: ${run_output}")
endif()

set(configure_args -S ${SOURCE_DIR}/tests/install/consumer -B ${consumer_build}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
if(LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
if(GENERATOR)
  list(APPEND configure_args -G ${GENERATOR})
endif()
run("configuring the consumer" ${CMAKE_COMMAND} ${configure_args})
run("building the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
run("running the consumer" ${consumer_build}/consumer)
if(NOT run_output STREQUAL "ok\n")
  message(FATAL_ERROR "the consumer printed '${run_output}', expected 'ok'")
endif()

# The ahead-of-time example (examples/aot_cpp) against the same prefix: find_package(tessera)
# gives the CLI as tessera::cli, which writes the C++ bundle at build time (docs/cli.md,
# "C++ bundles"). It needs the CUDA toolkit (cuda.h, the libcuda stub): AOT_EXAMPLE says
# whether tessera's own build found one.
if(AOT_EXAMPLE)
  set(aot_build ${WORK_DIR}/aot-build)
  set(aot_args -S ${SOURCE_DIR}/examples/aot_cpp -B ${aot_build}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
  if(LAUNCHER)
    list(APPEND aot_args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
  endif()
  if(GENERATOR)
    list(APPEND aot_args -G ${GENERATOR})
  endif()
  run("configuring examples/aot_cpp" ${CMAKE_COMMAND} ${aot_args})
  run("building examples/aot_cpp" ${CMAKE_COMMAND} --build ${aot_build})
  foreach(f generated/tessera_kernels.h generated/tessera_kernels.cpp aot_cpp_example)
    if(NOT EXISTS ${aot_build}/${f})
      message(FATAL_ERROR "building examples/aot_cpp against the prefix made no ${f}")
    endif()
  endforeach()
endif()

# pkg-config (when there is one) sees the same package.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  run("pkg-config" ${PKG_CONFIG} --cflags --libs tessera)
  if(NOT run_output MATCHES "-I[^ ]*include" OR NOT run_output MATCHES "-ltessera")
    message(FATAL_ERROR "pkg-config --cflags --libs tessera printed: ${run_output}")
  endif()
endif()
message(STATUS "installed package at ${prefix}: the consumer printed ok")
