# install_cluster_scripts.cmake — run by `cmake --install` (CMakeLists.txt, install part):
# the job scripts of mpi/ are installed with their XPCSFIT_BIN_DIR default set to the
# installed programs (PREFIX/bin), not the in-tree $HOME/xpcsfit/build. sbatch and qsub run
# a spooled copy of a job script, from which its own folder cannot be found, so the path is
# written into the installed copy here, at install time (the prefix is known only then).
# Set before this file: XF_SOURCE_DIR, XF_BINDIR (relative to the prefix, or absolute),
# XF_CLUSTER_DIR (the scripts' folder under the prefix), XF_STAGE (a folder of the build).
if(IS_ABSOLUTE "${XF_BINDIR}")
  set(bindir "${XF_BINDIR}")
else()
  set(bindir "${CMAKE_INSTALL_PREFIX}/${XF_BINDIR}")
endif()
# single-quoted for the shell, a quote in the path as '\''
string(REPLACE "'" "'\\''" quoted "${bindir}")
set(in_tree "bin_dir=\${XPCSFIT_BIN_DIR:-\$HOME/xpcsfit/build}")
set(installed "bin_dir=\${XPCSFIT_BIN_DIR:-'${quoted}'}")
foreach(script slurm/xpcsfit-mpi.sbatch slurm/xpcsfit-batch-array.sbatch pbs/xpcsfit-mpi.pbs
        pbs/xpcsfit-batch-array.pbs)
  file(READ "${XF_SOURCE_DIR}/mpi/${script}" text)
  string(FIND "${text}" "${in_tree}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "mpi/${script}: no line '${in_tree}' to set the installed binary folder in")
  endif()
  string(REPLACE "${in_tree}" "${installed}" text "${text}")
  get_filename_component(sub "${script}" DIRECTORY)
  set(dest "${XF_CLUSTER_DIR}/${sub}")
  if(NOT IS_ABSOLUTE "${dest}")
    set(dest "${CMAKE_INSTALL_PREFIX}/${dest}")
  endif()
  # staged in the build tree, then installed as install(PROGRAMS) would (DESTDIR, modes)
  file(WRITE "${XF_STAGE}/${script}" "${text}")
  file(INSTALL DESTINATION "${dest}" TYPE PROGRAM FILES "${XF_STAGE}/${script}")
endforeach()
