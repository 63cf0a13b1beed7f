# Locates LibTorch and defines the imported target opcost::torch.
#
# Order of preference:
#   1. OPCOST_TORCH_ROOT (cache or environment): a LibTorch tree with include/ and lib/
#      (an unpacked LibTorch archive, or .../site-packages/torch).
#   2. The torch of the Python given by OPCOST_PYTHON (cache or environment), else `python3`
#      on PATH, when it imports torch: the user's own torch.
#   3. The project's pinned virtual environment, .venv/ (scripts/bootstrap creates it).
#
# We import the libraries directly instead of calling find_package(Torch): TorchConfig of a
# CUDA build requires a matching CUDA toolkit at configure time, which neither CI nor most
# users have, and nothing in opcost compiles CUDA code: CUDA is reached through LibTorch.

set(OPCOST_TORCH_ROOT "$ENV{OPCOST_TORCH_ROOT}" CACHE PATH "LibTorch root (include/, lib/)")
set(OPCOST_PYTHON "$ENV{OPCOST_PYTHON}" CACHE FILEPATH "Python whose torch to build against")

function(_opcost_torch_from_python python out)
  execute_process(
    COMMAND "${python}" -c "import os, torch; print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    # pip builds in an isolated environment that hides the packages of the one it installs
    # into (through PYTHONPATH); -I ignores that, so the build finds the user's own torch
    # rather than needing a second one.
    execute_process(
      COMMAND "${python}" -I -c "import os, torch; print(os.path.dirname(torch.__file__))"
      OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  endif()
  if(rc EQUAL 0 AND EXISTS "${dir}/include")
    set(${out} "${dir}" PARENT_SCOPE)
  endif()
endfunction()

if(NOT OPCOST_TORCH_ROOT)
  set(_candidates "")
  if(OPCOST_PYTHON)
    find_program(_opcost_python NAMES "${OPCOST_PYTHON}" NO_CACHE)
    list(APPEND _candidates "${_opcost_python}")
  endif()
  find_program(_sys_python3 python3)
  list(APPEND _candidates "${_sys_python3}" "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  foreach(py IN LISTS _candidates)
    if(py AND EXISTS "${py}")
      unset(_root)
      _opcost_torch_from_python("${py}" _root)
      if(_root)
        set(OPCOST_TORCH_ROOT "${_root}" CACHE PATH "LibTorch root (include/, lib/)" FORCE)
        message(STATUS "opcost: LibTorch from the torch of ${py}")
        break()
      endif()
    endif()
  endforeach()
endif()

# The Python whose torch is this LibTorch, if any: tests that need Python's torch (making a
# TorchScript file) run it.
if(OPCOST_TORCH_ROOT AND NOT OPCOST_TORCH_PYTHON_CHECKED STREQUAL OPCOST_TORCH_ROOT)
  unset(OPCOST_TORCH_PYTHON CACHE)
  find_program(_sys_python3 python3)
  set(_given_python "")
  if(OPCOST_PYTHON AND IS_ABSOLUTE "${OPCOST_PYTHON}")
    set(_given_python "${OPCOST_PYTHON}")
  elseif(OPCOST_PYTHON)
    find_program(_given_python NAMES "${OPCOST_PYTHON}" NO_CACHE)
  endif()
  foreach(py IN ITEMS "${_given_python}" "${_sys_python3}" "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    if(py AND EXISTS "${py}")
      unset(_root)  # the function sets it only on success: no stale value from another Python
      _opcost_torch_from_python("${py}" _root)
      if(_root STREQUAL OPCOST_TORCH_ROOT)
        set(OPCOST_TORCH_PYTHON "${py}" CACHE FILEPATH "Python whose torch opcost is built against" FORCE)
        break()
      endif()
    endif()
  endforeach()
  set(OPCOST_TORCH_PYTHON_CHECKED "${OPCOST_TORCH_ROOT}" CACHE INTERNAL "")
endif()

if(NOT OPCOST_TORCH_ROOT OR NOT EXISTS "${OPCOST_TORCH_ROOT}/include/ATen/ATen.h")
  message(FATAL_ERROR
    "opcost: no LibTorch found. Run scripts/bootstrap (it creates .venv with the pinned "
    "torch), or set OPCOST_PYTHON to a Python with torch, or OPCOST_TORCH_ROOT to a LibTorch "
    "tree.")
endif()

file(STRINGS "${OPCOST_TORCH_ROOT}/include/torch/headeronly/version.h" _ver_lines
     REGEX "#define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3"
       OPCOST_TORCH_VERSION "${_ver_lines}")
set(OPCOST_PINNED_TORCH "2.11.0")
message(STATUS "opcost: LibTorch ${OPCOST_TORCH_VERSION} at ${OPCOST_TORCH_ROOT}")
if(NOT OPCOST_TORCH_VERSION VERSION_EQUAL OPCOST_PINNED_TORCH)
  message(WARNING "opcost is pinned to torch ${OPCOST_PINNED_TORCH}; building against "
                  "${OPCOST_TORCH_VERSION} may not compile or may behave differently.")
endif()

set(_lib "${OPCOST_TORCH_ROOT}/lib")
add_library(opcost::torch INTERFACE IMPORTED)
set(_torch_libs "${_lib}/libtorch.so" "${_lib}/libtorch_cpu.so" "${_lib}/libc10.so")
set(OPCOST_TORCH_HAS_CUDA OFF)
if(EXISTS "${_lib}/libtorch_cuda.so")
  set(OPCOST_TORCH_HAS_CUDA ON)
  list(APPEND _torch_libs "${_lib}/libtorch_cuda.so" "${_lib}/libc10_cuda.so")
endif()
target_include_directories(opcost::torch SYSTEM INTERFACE
  "${OPCOST_TORCH_ROOT}/include" "${OPCOST_TORCH_ROOT}/include/torch/csrc/api/include")
# --no-as-needed keeps libtorch_cuda loaded: it registers the CUDA backend at load time
# even though no symbol of it is referenced from most translation units.
target_link_libraries(opcost::torch INTERFACE "-Wl,--no-as-needed" ${_torch_libs}
                      "-Wl,--as-needed")
target_link_options(opcost::torch INTERFACE "-Wl,-rpath,${_lib}")
execute_process(
  COMMAND sh -c "strings '${_lib}/libc10.so' | grep -q '_ZNSt7__cxx11' && echo 1 || echo 0"
  OUTPUT_VARIABLE _abi OUTPUT_STRIP_TRAILING_WHITESPACE)
# The whole project shares std::string with LibTorch, so the ABI is set globally.
add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=${_abi})
# LibTorch ships its own fmt headers (a newer major version than Debian's libfmt), and they
# come first on the include path of LibTorch translation units: those use them header-only.
# fmt's versioned inline namespace keeps the two apart at link time.
target_compile_definitions(opcost::torch INTERFACE FMT_HEADER_ONLY=1)
if(OPCOST_TORCH_HAS_CUDA)
  target_compile_definitions(opcost::torch INTERFACE OPCOST_TORCH_HAS_CUDA=1)
endif()
