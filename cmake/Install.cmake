# `cmake --install build [--prefix DIR]` (docs/cpp-api.md):
#   include/tessera/tessera.h             the public C++ API (no internal IR headers)
#   lib/libtessera.so                     the compiler and runtime
#   bin/tessera                           the CLI (finds the library through $ORIGIN/../lib)
#   share/tessera/kernels/                the bundled kernels and manifest.txt (`tessera aot` with no manifest)
#   lib/cmake/tessera/tesseraConfig.cmake find_package(tessera): the targets tessera::tessera and tessera::cli
#   lib/pkgconfig/tessera.pc              pkg-config --cflags --libs tessera
# The paths are fixed (lib, not lib64) because the CLI's RPATH is $ORIGIN/../lib.
include(CMakePackageConfigHelpers)

set(TESSERA_INSTALL_CMAKEDIR lib/cmake/tessera)

target_include_directories(tessera INTERFACE "$<INSTALL_INTERFACE:include>")
install(FILES ${PROJECT_SOURCE_DIR}/include/tessera/tessera.h DESTINATION include/tessera)
install(TARGETS tessera EXPORT tesseraTargets LIBRARY DESTINATION lib)
# The CLI is exported too, as tessera::cli (examples/aot_cpp runs `tessera aot` at build time).
set_target_properties(tessera-cli PROPERTIES EXPORT_NAME cli)
install(TARGETS tessera-cli EXPORT tesseraTargets RUNTIME DESTINATION bin)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kernels/ DESTINATION share/tessera/kernels
        FILES_MATCHING PATTERN "*.py" PATTERN "manifest.txt" PATTERN "__init__.py" EXCLUDE
        PATTERN "__pycache__" EXCLUDE)

install(EXPORT tesseraTargets NAMESPACE tessera:: DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tesseraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/tesseraConfig.cmake
  INSTALL_DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/tesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tesseraConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/tesseraConfigVersion.cmake
        DESTINATION ${TESSERA_INSTALL_CMAKEDIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/tessera.pc.in ${PROJECT_BINARY_DIR}/cmake/tessera.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/tessera.pc DESTINATION lib/pkgconfig)
