# Installation for other codes: the library, the public headers (include/latke), a CMake
# package (find_package(Latke) -> Latke::latke, carrying the PETSc and MPI usage
# requirements) and a pkg-config file (latke.pc, which requires PETSc's).
include(CMakePackageConfigHelpers)

install(TARGETS latke EXPORT LatkeTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/latke DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Latke's programs use the C++ layers below the C API: they link the private library, the same
# code with every symbol exported, which is installed beside liblatke for them (not part of the
# CMake package or of latke.pc).
install(TARGETS latke_private LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS latke-bench latke-solve latke-gauge latke-propagator RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${CMAKE_BINARY_DIR}/bin/latke-scale ${CMAKE_BINARY_DIR}/bin/latke-spectrum DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_BINARY_DIR}/bin/latke_model.py DESTINATION ${CMAKE_INSTALL_BINDIR})

set(LATKE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Latke)
install(EXPORT LatkeTargets NAMESPACE Latke:: DESTINATION ${LATKE_CMAKE_DIR})
configure_package_config_file(cmake/LatkeConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/LatkeConfig.cmake
                              INSTALL_DESTINATION ${LATKE_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/LatkeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/LatkeConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/LatkeConfigVersion.cmake
        DESTINATION ${LATKE_CMAKE_DIR})

# pkg-config: MPI's include directories go into Cflags because PETSc.pc does not carry them.
set(latke_pc_mpi_cflags "")
foreach(dir ${MPI_C_INCLUDE_DIRS})
  string(APPEND latke_pc_mpi_cflags " -I${dir}")
endforeach()
set(latke_pc_mpi_libs "")
foreach(lib ${MPI_C_LIBRARIES})
  string(APPEND latke_pc_mpi_libs " ${lib}")
endforeach()
# PETSc.pc carries no run path; a PETSc outside the loader's directories (one built with
# scripts/build-petsc-cuda.sh) is found at run time through this one.
if(NOT PETSC_LIBDIR IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
  string(APPEND latke_pc_mpi_libs " -Wl,-rpath,${PETSC_LIBDIR}")
endif()
configure_file(cmake/latke.pc.in ${CMAKE_CURRENT_BINARY_DIR}/latke.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/latke.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
