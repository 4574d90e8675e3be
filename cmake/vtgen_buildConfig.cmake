# vtgen_buildConfig.cmake -- the CMake package of vtgen_build.
#
# Finding it
# ----------
#   find_package(vtgen_build 0.1 CONFIG REQUIRED)
#
# works when any of these holds:
#   * vtgen_build_DIR is the output of `python -m vtgen_build --cmakedir`
#     (or `vtgen-build --cmakedir`), e.g.
#       cmake -S . -B build -Dvtgen_build_DIR="$(python -m vtgen_build --cmakedir)"
#   * the project is built by scikit-build-core with vtgen_build in
#     build-system.requires: the package's `cmake.root` and `cmake.prefix`
#     entry points (module vtgen_build.cmake) point CMake here, no path needed;
#   * CMAKE_PREFIX_PATH holds the site-packages directory vtgen_build is in
#     (an installed wheel: this file is <site-packages>/vtgen_build/cmake/...).
#
# The sources of this package are the top-level cmake/ of vtgen_build's
# checkout; a wheel ships them as vtgen_build/cmake (setup.py).
#
# What it defines
# ---------------
#   vtgen_build_FOUND, vtgen_build_VERSION   as for any package.
#   vtgen_build_PYTHON_EXECUTABLE            the interpreter that runs the generator:
#       the first of these that imports this very copy of vtgen_build:
#       the value you set (-Dvtgen_build_PYTHON_EXECUTABLE=...; then it must),
#       Python_EXECUTABLE / Python3_EXECUTABLE / PYTHON_EXECUTABLE (scikit-build-core
#       sets them to the interpreter running the build), the interpreter of the
#       environment this package is installed in (the one `--cmakedir` ran with),
#       and finally the one find_package(Python3 COMPONENTS Interpreter) finds.
#   vtgen_build_STUB_INCLUDE_DIR             the stub ATen/c10/autograd headers shipped
#                                            with the package.
#   vtgen::stub_aten                         an IMPORTED INTERFACE target carrying
#                                            that include directory.
#
# vtgen_generate()
# ----------------
#   vtgen_generate(<target>
#                  NATIVE_FUNCTIONS <file>       # required: native_functions.yaml
#                  DERIVATIVES <file>            # required: derivatives.yaml
#                  [TAGS <file>]                 # tags.yaml
#                  [MANUAL_HEADERS <header>...]  # helpers formulas call, spelled as #included
#                  [USING_NAMESPACES <ns>...]    # namespaces of those helpers (using namespace <ns>;)
#                  [SHARDS <n>]                  # translation units per kind, 1..1024 (default: from the op count)
#                  [OUTPUT_DIR <dir>]            # default ${CMAKE_CURRENT_BINARY_DIR}/vtgen/<target>
#                  [NAMESPACE <ns>]              # op namespace of unqualified `func:`s (default aten)
#                  [PYTHON_API <destination>]    # install a typed Python API of the ops there
#                  [PYTHON_AUTOGRAD <destination>] # install the ops' autograd as Python there
#                  [PYTHON_FORMULAS <file>]      # with PYTHON_AUTOGRAD: the helpers' Python module
#                  [USE_TORCH]                   # compile against find_package(Torch), not the stubs
#                  [PRECOMPILE_HEADERS]          # precompile the ATen/autograd headers the kernels share
#                  [NO_PRECOMPILE_HEADERS]       # not even with USE_TORCH (where it is the default)
#                  [REGISTER_BACKENDS <key>...]  # generate the registrations of these dispatch keys' kernels
#                  [FAKE_MODULE <module>]        # the Python module registering the ops' fake kernels
#                  [STABLE_ABI <X.Y>])           # a LibTorch stable-ABI library for torch >= X.Y (see below)
#
#   Adds to <target> (a library or executable created in the same directory)
#   the generated VariableType_<k>.cpp, ADInplaceOrViewType_<k>.cpp and
#   Functions_<k>.cpp (k < SHARDS) and RegisterSchema.cpp (the TORCH_LIBRARY
#   block defining the schemas of NAMESPACE's ops; empty for aten), puts
#   OUTPUT_DIR (Functions.h, Functions_<k>.h) on its include path (PUBLIC) and links
#   vtgen::stub_aten -- or, with USE_TORCH, the `torch_cpu` and `c10` targets of
#   find_package(Torch) (Torch_DIR is taken from the generator's Python,
#   torch.utils.cmake_prefix_path, when unset), and the code follows that torch's
#   release (`--torch-version <major>.<minor>`).  With USE_TORCH the target also
#   gets hidden visibility (unless it sets CXX_VISIBILITY_PRESET itself) and, when
#   it is a SHARED or MODULE library on Linux, `-Wl,-Bsymbolic -Wl,--no-undefined`:
#   the generated Node classes share names with libtorch's own, and must bind to
#   ours; anything libtorch does not export fails the link, not the import.
#   MANUAL_HEADERS are written into the generated code as `#include "<header>"`
#   (e.g. myops/helpers.h): put their directory on <target>'s include path.
#   Relative input paths are taken from the current source directory, a
#   relative OUTPUT_DIR from the current binary directory.  The target property
#   VTGEN_OUTPUT_DIR holds the output directory (e.g. to install its headers).
#   PYTHON_API <destination> also generates OUTPUT_DIR/python_api/__init__.py (one
#   typed function per op, calling torch.ops.<ns>.<op>; docstrings from the yaml)
#   and py.typed, and installs both to <destination>, a path relative to the
#   install prefix naming a subpackage of your Python package (vtsample/ops under
#   scikit-build-core): `import vtsample.ops` after the library is loaded.
#   PYTHON_AUTOGRAD <destination> also generates OUTPUT_DIR/python_autograd/_autograd.py
#   (each op's autograd from derivatives.yaml as an autograd.Function registered as its
#   Autograd kernel: for kernels without C++ autograd; docs/design/python-autograd.md) and
#   installs it to <destination>, a package directory relative to the install prefix
#   (e.g. vtsample): `import vtsample._autograd` after the library is loaded.  PYTHON_FORMULAS
#   <file> names the Python module of the helpers the formulas call; it is copied beside the
#   generated module and installed with it.
#
#   The generator runs as a build step (one add_custom_command): its stamp file
#   is the OUTPUT and the generated files are BYPRODUCTS; the inputs come from
#   the generator's own depfile (every file it read), so nothing is listed by
#   hand.  It rewrites only the files whose content changed, so Ninja (restat)
#   and Make (byproducts have no rule of their own, sources are checked after
#   the generator ran) recompile only those.  A YAML mistake fails the build
#   with `<file>:<line>: error: <message>` from the generator; a formula that
#   does not compile fails it with the compiler's error at `derivatives.yaml:<line>`
#   (the generated code carries `#line` directives).
#
#   The generated sources are ordinary sources of <target>: a compiler launcher
#   set with -DCMAKE_CXX_COMPILER_LAUNCHER=ccache (or sccache, distcc), or the
#   target's CXX_COMPILER_LAUNCHER property, runs their compiles too.
#   PRECOMPILE_HEADERS precompiles the ATen / autograd headers every generated
#   unit needs (target_precompile_headers: torch/csrc/autograd/VariableTypeUtils.h
#   and torch/library.h, plus ATen/RedispatchFunctions.h for NAMESPACE aten): one
#   header for the whole target, built once; every C++ source of <target>, your own
#   too, then sees it first.  With ccache, set CCACHE_SLOPPINESS=pch_defines,time_macros.
#
#   REGISTER_BACKENDS (USE_TORCH only) turns on the backend registrations: the kernels each
#   `dispatch:` of native_functions.yaml names are declared in OUTPUT_DIR/NativeKernels.h (with
#   PyTorch's native C++ signature, in the op namespace) and registered by one generated
#   Register<key>.cpp per listed key (e.g. CPU Meta CompositeExplicitAutograd); structured ops get
#   their functional, in-place, out= and Meta kernels generated around the author's meta function
#   and impls.  List only the keys this target compiles (CUDA: a target with the CUDA impls).
#   The author's sources define the kernels and hold no TORCH_LIBRARY_IMPL.  A kernel declared
#   there that no source defines fails the link with `native_functions.yaml:<line>: error: ...`
#   (the target's RULE_LAUNCH_LINK runs the link through `python -m vtgen_build.linkcheck`).
#   FAKE_MODULE names, in the generated schema registration (m.set_python_module), the Python
#   module that calls torch.library.register_fake for the ops without a Meta kernel.  An op library
#   (NAMESPACE not aten) also gets RegisterFunctionalize.cpp (its out= ops under torch.compile) and
#   AOTIShims.cpp/.h: AOTInductor C shims of its ops (exported with default visibility), which the
#   typed Python API's install_aoti_c_shims() makes AOTInductor packages call directly.
#
#   STABLE_ABI X.Y (X.Y >= 2.10, not newer than the torch the generator's Python has) builds the
#   library on the LibTorch stable ABI instead: one library for every PyTorch from X.Y on, with no
#   C++ autograd (DERIVATIVES is read and checked: it is the input of the Python autograd).  It needs
#   REGISTER_BACKENDS, refuses USE_TORCH and PRECOMPILE_HEADERS, and adds RegisterSchema.cpp
#   (STABLE_TORCH_LIBRARY) and Register<Key>.cpp (STABLE_TORCH_LIBRARY_IMPL, TORCH_BOX, and the
#   AOTInductor C shims of the key's kernels, on the stable ABI) to <target>,
#   NativeKernels.h on stable types, torch's include directory, -DTORCH_TARGET_VERSION (PUBLIC),
#   -ffunction-sections, hidden visibility and libtorch_cpu as a needed library; a SHARED or MODULE
#   <target> is audited after linking (`vtgen-build abi-audit`): an undefined symbol that is not a
#   stable C-shim function or C/C++ runtime fails the build at the op whose kernel reached it.
#   The compiler's runtimes (libgomp for OpenMP, libgcc_s, libstdc++, libc, libm, libatomic) count
#   as runtime.  ABI_AUDIT_ALLOW <glob>... allows more symbols (mangled or demangled names), and
#   ABI_AUDIT_ALLOW_LIBRARIES <lib>... every symbol those shared libraries (the library's own
#   dependencies, never libtorch's) export.  A symbol looked up at run time (dlsym) is not seen.
#
#   Defaults (fast real-torch builds):
#   * With USE_TORCH the headers are precompiled unless NO_PRECOMPILE_HEADERS is
#     given (or CMAKE_DISABLE_PRECOMPILE_HEADERS is ON, CMake's own switch).  The
#     sample with g++ 12: a unit's CPU seconds drop to 0.3-0.7x, but the header
#     itself takes ~17 s to build and every unit waits for it, so a cold build
#     is about 0.75x of one without (bench/README.md has the figures and why).
#   * SHARDS, when not given, follows the size of the library: one shard per 32
#     entries (`- func:` lines) of NATIVE_FUNCTIONS, at least 1 and at most 10
#     (a 12-op library gets 1; PyTorch's own yaml 10).  The count is taken when
#     CMake configures, and an edit of NATIVE_FUNCTIONS reconfigures; the
#     generator gets the number as `--shards`, so CMake's source list, the files
#     written and the manifest agree.  The setuptools hook applies the same rule
#     (vtgen_build.engine.generate.default_shards).
#   * With USE_TORCH, when CMAKE_BUILD_TYPE is empty and the generator is
#     single-config, the build type becomes Release (a cache value: set
#     CMAKE_BUILD_TYPE to anything, e.g. Debug or None, and it is kept).
#   * With USE_TORCH and GCC or Clang, the generated units (not your sources) are
#     compiled at -O1 in Release and RelWithDebInfo: they are glue calling into
#     libtorch; -O1 compiles them ~1/5 faster than -O3 and the sample's ops ran
#     as fast.  Set VTGEN_GENERATED_OPTIMIZATION (a variable or -D/cache value,
#     read by vtgen_generate()) to other flags, e.g. -O3, or to "" for the build
#     type's own flags.
#
#   Example:
#     find_package(vtgen_build CONFIG REQUIRED)
#     add_library(myops OBJECT)
#     target_include_directories(myops PUBLIC include)
#     vtgen_generate(myops
#       NATIVE_FUNCTIONS native_functions.yaml
#       DERIVATIVES derivatives.yaml
#       MANUAL_HEADERS myops/helpers.h
#       USING_NAMESPACES myops::autograd_helpers
#       NAMESPACE myops
#       SHARDS 2)
#
# Names: public functions vtgen_*, imported targets vtgen::*, variables
# vtgen_build_*; everything named _vtgen_* is private.

if(CMAKE_VERSION VERSION_LESS 3.20)
  set(vtgen_build_FOUND FALSE)
  set(vtgen_build_NOT_FOUND_MESSAGE
      "vtgen_build needs CMake 3.20 or newer (DEPFILE with Makefiles); this is CMake ${CMAKE_VERSION}")
  return()
endif()

# A failure is remembered for the rest of this configure run, so a second
# find_package() (e.g. from a subdirectory) does not report success.
get_property(_vtgen_failure GLOBAL PROPERTY _vtgen_build_NOT_FOUND_MESSAGE)
if(_vtgen_failure)
  set(vtgen_build_FOUND FALSE)
  set(vtgen_build_NOT_FOUND_MESSAGE "${_vtgen_failure}")
  unset(_vtgen_failure)
  return()
endif()
unset(_vtgen_failure)

include_guard(GLOBAL)

# Policies for this file and for the functions it defines (a function runs
# with the policies recorded where it was defined, not the caller's).
cmake_policy(VERSION 3.20...3.31)

# ---------------------------------------------------------------------------
# Locating the interpreter that runs the generator
# ---------------------------------------------------------------------------

# The package directory: this file is <package>/cmake/vtgen_buildConfig.cmake in
# an installed wheel, <checkout>/cmake/vtgen_buildConfig.cmake beside
# <checkout>/vtgen_build in a source checkout or an editable install.
get_filename_component(_vtgen_cmake_dir "${CMAKE_CURRENT_LIST_DIR}" REALPATH)
get_filename_component(_vtgen_package_dir "${_vtgen_cmake_dir}" DIRECTORY)
if(NOT EXISTS "${_vtgen_package_dir}/__init__.py")
  set(_vtgen_package_dir "${_vtgen_package_dir}/vtgen_build")
endif()

# _vtgen_check_python(<python> <ok-var> <why-var>): does <python> import this
# copy of vtgen_build (and its dependencies)?  <ok-var> is then the
# interpreter's own sys.executable (a pyenv shim or a wrapper script resolves
# to the real interpreter, so the build does not depend on how it was named).
function(_vtgen_check_python python ok_var why_var)
  set(${ok_var} "" PARENT_SCOPE)
  if(NOT EXISTS "${python}" OR IS_DIRECTORY "${python}")
    set(${why_var} "no such file" PARENT_SCOPE)
    return()
  endif()
  execute_process(
    COMMAND "${python}" -c "import sys, vtgen_build, vtgen_build.cli.commands; print(vtgen_build.get_cmake_dir()); print(sys.executable)"
    # `-c` puts the working directory first on sys.path: not the caller's,
    # which may be a checkout holding another vtgen_build.
    WORKING_DIRECTORY "${_vtgen_cmake_dir}"
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    string(REGEX REPLACE "^.*\n" "" err "${err}")  # the last line: the exception
    set(${why_var} "cannot import vtgen_build (${err})" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" out "${out}")
  list(GET out 0 cmake_dir)
  list(GET out -1 executable)
  get_filename_component(cmake_dir "${cmake_dir}" REALPATH)
  if(NOT cmake_dir STREQUAL _vtgen_cmake_dir)
    set(${why_var} "imports another copy of vtgen_build (${cmake_dir})" PARENT_SCOPE)
    return()
  endif()
  if(NOT EXISTS "${executable}")
    set(executable "${python}")
  endif()
  set(${ok_var} "${executable}" PARENT_SCOPE)
endfunction()

# _vtgen_installed_python(<out-var>): the interpreter(s) of the environment
# whose site-packages holds this package, by the standard layouts.
function(_vtgen_installed_python out_var)
  set(found "")
  get_filename_component(site "${_vtgen_package_dir}" DIRECTORY)
  get_filename_component(site_name "${site}" NAME)
  if(site_name MATCHES "^(site|dist)-packages$")
    get_filename_component(libdir "${site}" DIRECTORY)          # <prefix>/lib/pythonX.Y or <prefix>/Lib
    get_filename_component(libdir_name "${libdir}" NAME)
    if(libdir_name MATCHES "^python([0-9]+\\.[0-9]+t?)$")
      set(minor "${CMAKE_MATCH_1}")
      get_filename_component(prefix "${libdir}/../.." ABSOLUTE)
      foreach(name IN ITEMS "python${minor}" python3 python)
        list(APPEND found "${prefix}/bin/${name}")
      endforeach()
    elseif(libdir_name STREQUAL "python3")                        # Debian: /usr/lib/python3/dist-packages
      get_filename_component(prefix "${libdir}/../.." ABSOLUTE)
      list(APPEND found "${prefix}/bin/python3")
    elseif(libdir_name STREQUAL "Lib")                            # Windows
      get_filename_component(prefix "${libdir}" DIRECTORY)
      list(APPEND found "${prefix}/python.exe" "${prefix}/Scripts/python.exe")
    endif()
  endif()
  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()

# The first of ARGN (existing interpreters only) that imports this package; tried_var: why the others failed.
function(_vtgen_first_working_python out_var tried_var)
  set(tried "")
  foreach(python IN LISTS ARGN)
    if(EXISTS "${python}")
      _vtgen_check_python("${python}" ok why)
      if(ok)
        set(${out_var} "${ok}" PARENT_SCOPE)
        set(${tried_var} "${tried}" PARENT_SCOPE)
        return()
      endif()
      string(APPEND tried "\n  ${python}: ${why}")
    endif()
  endforeach()
  set(${out_var} "" PARENT_SCOPE)
  set(${tried_var} "${tried}" PARENT_SCOPE)
endfunction()

function(_vtgen_find_python out_var error_var)
  set(${out_var} "" PARENT_SCOPE)
  set(${error_var} "" PARENT_SCOPE)
  # 1. The interpreter the user named: the only candidate then.
  if(_vtgen_user_python)
    _vtgen_check_python("${vtgen_build_PYTHON_EXECUTABLE}" ok why)
    if(ok)
      set(${out_var} "${ok}" PARENT_SCOPE)
    else()
      string(CONCAT message
          "vtgen_build_PYTHON_EXECUTABLE=${vtgen_build_PYTHON_EXECUTABLE}: ${why}.  Install vtgen_build for that "
          "interpreter (`${vtgen_build_PYTHON_EXECUTABLE} -m pip install vtgen_build`) or unset the variable.")
      set(${error_var} "${message}" PARENT_SCOPE)
    endif()
    return()
  endif()
  # 2. An interpreter the project (or scikit-build-core) already chose,
  # 3. the interpreter of the environment this package is installed in.
  _vtgen_installed_python(installed)
  set(candidates "")
  foreach(var IN ITEMS Python_EXECUTABLE Python3_EXECUTABLE PYTHON_EXECUTABLE)
    if(${var})
      list(APPEND candidates "${${var}}")
    endif()
  endforeach()
  list(APPEND candidates ${installed})
  list(REMOVE_DUPLICATES candidates)
  _vtgen_first_working_python(found tried ${candidates})
  # 4. Whatever FindPython3 finds (asked only when none of those works).
  if(NOT found)
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(NOT Python3_Interpreter_FOUND)
      string(APPEND tried "\n  find_package(Python3 COMPONENTS Interpreter): not found")
    elseif(NOT "${Python3_EXECUTABLE}" IN_LIST candidates)
      _vtgen_first_working_python(found more "${Python3_EXECUTABLE}")
      string(APPEND tried "${more}")
    endif()
  endif()
  if(found)
    set(${out_var} "${found}" PARENT_SCOPE)
    return()
  endif()
  string(CONCAT message
      "no Python interpreter imports the vtgen_build package in ${_vtgen_package_dir}.  Tried:${tried}\n"
      "Pass -Dvtgen_build_PYTHON_EXECUTABLE=<python> naming the interpreter that has vtgen_build installed "
      "(the one that printed `--cmakedir`), or point vtgen_build_DIR at the copy your interpreter imports "
      "(a reused build directory may still remember one from another environment).")
  set(${error_var} "${message}" PARENT_SCOPE)
endfunction()

# A value of vtgen_build_PYTHON_EXECUTABLE that we did not write ourselves was set by the user.
set(_vtgen_user_python FALSE)
if(vtgen_build_PYTHON_EXECUTABLE AND NOT vtgen_build_PYTHON_EXECUTABLE STREQUAL "${_vtgen_build_PYTHON_DETECTED}")
  set(_vtgen_user_python TRUE)
endif()
_vtgen_find_python(_vtgen_python _vtgen_error)
if(_vtgen_error)
  set_property(GLOBAL PROPERTY _vtgen_build_NOT_FOUND_MESSAGE "${_vtgen_error}")
  set(vtgen_build_FOUND FALSE)
  set(vtgen_build_NOT_FOUND_MESSAGE "${_vtgen_error}")
  unset(_vtgen_python)
  unset(_vtgen_user_python)
  unset(_vtgen_error)
  unset(_vtgen_cmake_dir)
  unset(_vtgen_package_dir)
  return()
endif()
unset(_vtgen_error)

# Results live in the cache so that every directory sees them (this file runs
# once per configure, whichever directory calls find_package first).  A value
# we detected is re-detected on the next configure; a value the user set is kept.
if(_vtgen_user_python)
  set(_vtgen_build_PYTHON_DETECTED "" CACHE INTERNAL "")
else()
  set(vtgen_build_PYTHON_EXECUTABLE "${_vtgen_python}" CACHE FILEPATH
      "Python interpreter that runs vtgen_build (empty: detect)" FORCE)
  set(_vtgen_build_PYTHON_DETECTED "${_vtgen_python}" CACHE INTERNAL "")
endif()
set(vtgen_build_STUB_INCLUDE_DIR "${_vtgen_package_dir}/stubs/include" CACHE INTERNAL
    "Stub ATen/c10/autograd headers of vtgen_build")
set_property(GLOBAL PROPERTY _vtgen_python "${_vtgen_python}")
set_property(GLOBAL PROPERTY _vtgen_version "${vtgen_build_VERSION}")
unset(_vtgen_python)
unset(_vtgen_user_python)
unset(_vtgen_cmake_dir)
unset(_vtgen_package_dir)

if(NOT TARGET vtgen::stub_aten)
  add_library(vtgen::stub_aten INTERFACE IMPORTED GLOBAL)
  if(IS_DIRECTORY "${vtgen_build_STUB_INCLUDE_DIR}")
    set_target_properties(vtgen::stub_aten PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${vtgen_build_STUB_INCLUDE_DIR}"
      INTERFACE_COMPILE_FEATURES cxx_std_17)
  endif()
endif()

# ---------------------------------------------------------------------------
# vtgen_generate()
# ---------------------------------------------------------------------------

# PYTHON_AUTOGRAD / PYTHON_FORMULAS of vtgen_generate(): the generated Python autograd module
# (and the author's formulas module, copied beside it so its relative import finds it).
macro(_vtgen_python_autograd)  # PYTHON_FORMULAS without PYTHON_AUTOGRAD: refused by _vtgen_check_names()
  if(DEFINED arg_PYTHON_AUTOGRAD)
    if(IS_ABSOLUTE "${arg_PYTHON_AUTOGRAD}" OR arg_PYTHON_AUTOGRAD MATCHES "(^|/)\\.\\.(/|$)")
      message(FATAL_ERROR "vtgen_generate(): PYTHON_AUTOGRAD must be a relative install destination "
                          "(a package directory such as mypkg), got '${arg_PYTHON_AUTOGRAD}'")
    endif()
    set(python_autograd "${out_dir}/python_autograd")
    list(APPEND command --python-autograd "${python_autograd}/_autograd.py")
    list(APPEND headers "${python_autograd}/_autograd.py")
    install(FILES "${python_autograd}/_autograd.py" DESTINATION "${arg_PYTHON_AUTOGRAD}")
    if(DEFINED arg_PYTHON_FORMULAS)
      get_filename_component(formulas "${arg_PYTHON_FORMULAS}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      if(NOT EXISTS "${formulas}")
        message(FATAL_ERROR "vtgen_generate(): PYTHON_FORMULAS: no such file: ${formulas}")
      endif()
      get_filename_component(formulas_name "${formulas}" NAME)
      configure_file("${formulas}" "${python_autograd}/${formulas_name}" COPYONLY)
      list(APPEND command --python-formulas "${python_autograd}/${formulas_name}")
      list(APPEND inputs "${python_autograd}/${formulas_name}")
      install(FILES "${python_autograd}/${formulas_name}" DESTINATION "${arg_PYTHON_AUTOGRAD}")
    endif()
  endif()
endmacro()

function(vtgen_generate target)
  # -- arguments --------------------------------------------------------------
  set(options USE_TORCH PRECOMPILE_HEADERS NO_PRECOMPILE_HEADERS)
  set(one_value NATIVE_FUNCTIONS DERIVATIVES TAGS SHARDS OUTPUT_DIR NAMESPACE FAKE_MODULE PYTHON_API PYTHON_AUTOGRAD
                PYTHON_FORMULAS STABLE_ABI)
  set(multi_value MANUAL_HEADERS USING_NAMESPACES REGISTER_BACKENDS ABI_AUDIT_ALLOW ABI_AUDIT_ALLOW_LIBRARIES)
  cmake_parse_arguments(PARSE_ARGV 1 arg "${options}" "${one_value}" "${multi_value}")

  if(target STREQUAL "" OR target IN_LIST one_value OR target IN_LIST multi_value OR target IN_LIST options)
    message(FATAL_ERROR "vtgen_generate(): the first argument must be the target to add the kernels to")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " unparsed)
    message(FATAL_ERROR "vtgen_generate(): unknown argument(s): ${unparsed}.  Known keywords: "
                        "NATIVE_FUNCTIONS DERIVATIVES TAGS MANUAL_HEADERS USING_NAMESPACES SHARDS OUTPUT_DIR "
                        "NAMESPACE PYTHON_API PYTHON_AUTOGRAD PYTHON_FORMULAS USE_TORCH PRECOMPILE_HEADERS "
                        "NO_PRECOMPILE_HEADERS REGISTER_BACKENDS FAKE_MODULE STABLE_ABI ABI_AUDIT_ALLOW "
                        "ABI_AUDIT_ALLOW_LIBRARIES")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    list(JOIN arg_KEYWORDS_MISSING_VALUES ", " missing)
    message(FATAL_ERROR "vtgen_generate(): missing value for ${missing}")
  endif()
  # An explicit empty string (`OUTPUT_DIR ""`, often an unset variable) is
  # dropped by cmake_parse_arguments as if the keyword had not been given:
  # find it in the raw arguments instead.
  set(keyword "")
  math(EXPR last_arg "${ARGC} - 1")
  if(last_arg GREATER_EQUAL 1)  # (RANGE 1 0 would count down)
    foreach(i RANGE 1 ${last_arg})
      if("${ARGV${i}}" IN_LIST one_value OR "${ARGV${i}}" IN_LIST multi_value)
        set(keyword "${ARGV${i}}")
      elseif("${ARGV${i}}" STREQUAL "")
        message(FATAL_ERROR "vtgen_generate(): missing value for ${keyword} (an empty string was given)")
      endif()
    endforeach()
  endif()
  foreach(keyword IN ITEMS NATIVE_FUNCTIONS DERIVATIVES)
    if(NOT DEFINED arg_${keyword})
      message(FATAL_ERROR "vtgen_generate(): ${keyword} <file> is required")
    endif()
  endforeach()

  # -- the target -------------------------------------------------------------
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "vtgen_generate(): '${target}' is not a target; create it first "
                        "(e.g. add_library(${target} OBJECT))")
  endif()
  get_target_property(type "${target}" TYPE)
  get_target_property(imported "${target}" IMPORTED)
  get_target_property(aliased "${target}" ALIASED_TARGET)
  if(imported OR aliased)
    message(FATAL_ERROR "vtgen_generate(): '${target}' is an imported or alias target; give a target this project builds")
  endif()
  if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
    message(FATAL_ERROR "vtgen_generate(): '${target}' has type ${type}; it must be a library or executable "
                        "that compiles sources (e.g. add_library(${target} OBJECT))")
  endif()
  get_target_property(target_dir "${target}" SOURCE_DIR)
  if(NOT target_dir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    message(FATAL_ERROR "vtgen_generate(): call it in the directory that created '${target}' (${target_dir}): "
                        "generated sources can only be attached there")
  endif()
  get_target_property(done "${target}" VTGEN_OUTPUT_DIR)
  if(done)
    message(FATAL_ERROR "vtgen_generate(): '${target}' already has generated kernels (in ${done}); "
                        "one vtgen_generate() per target")
  endif()

  # -- values -----------------------------------------------------------------
  if(arg_PRECOMPILE_HEADERS AND arg_NO_PRECOMPILE_HEADERS)
    message(FATAL_ERROR "vtgen_generate(): PRECOMPILE_HEADERS and NO_PRECOMPILE_HEADERS contradict each other; give one")
  endif()
  if(DEFINED arg_SHARDS)
    if(NOT arg_SHARDS MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "vtgen_generate(): SHARDS must be a positive integer, got '${arg_SHARDS}'")
    endif()
    # the generator's range (vtgen-build --shards): say so at configure time, not at build time
    string(LENGTH "${arg_SHARDS}" digits)
    if(digits GREATER 4 OR arg_SHARDS GREATER 1024)
      message(FATAL_ERROR "vtgen_generate(): SHARDS must be in 1..1024, got '${arg_SHARDS}'")
    endif()
    set(shards "${arg_SHARDS}")
  endif()
  set(namespace aten)
  if(DEFINED arg_NAMESPACE)
    set(namespace "${arg_NAMESPACE}")
  endif()
  _vtgen_check_names()  # NAMESPACE, USING_NAMESPACES, MANUAL_HEADERS, REGISTER_BACKENDS, FAKE_MODULE
  set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/vtgen/${target}")
  if(DEFINED arg_OUTPUT_DIR)
    get_filename_component(out_dir "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  get_property(used_dirs GLOBAL PROPERTY _vtgen_output_dirs)
  if(out_dir IN_LIST used_dirs)
    message(FATAL_ERROR "vtgen_generate(): OUTPUT_DIR ${out_dir} is already used by another vtgen_generate()")
  endif()
  set_property(GLOBAL APPEND PROPERTY _vtgen_output_dirs "${out_dir}")

  set(inputs "")
  foreach(keyword IN ITEMS NATIVE_FUNCTIONS DERIVATIVES TAGS)
    if(DEFINED arg_${keyword})
      _vtgen_input_path("${keyword}" "${arg_${keyword}}" path)
      set(${keyword} "${path}")
      list(APPEND inputs "${path}")
    endif()
  endforeach()
  if(NOT DEFINED arg_SHARDS)
    _vtgen_default_shards("${NATIVE_FUNCTIONS}" shards)
  endif()

  get_property(python GLOBAL PROPERTY _vtgen_python)

  # -- the command (both modes add to it) ---------------------------------------------
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.dir/vtgen.stamp")
  set(depfile "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.dir/vtgen.d")  # written by the generator
  set(command "${python}" -m vtgen_build generate
      --native-functions "${NATIVE_FUNCTIONS}" --derivatives "${DERIVATIVES}")
  if(DEFINED TAGS)
    list(APPEND command --tags "${TAGS}")
  endif()

  if(DEFINED arg_STABLE_ABI)
    _vtgen_generate_stable()  # the stable-ABI mode: its own sources, flags, link and audit
    return()
  endif()
  foreach(_vtgen_bad IN ITEMS ABI_AUDIT_ALLOW ABI_AUDIT_ALLOW_LIBRARIES)
    if(DEFINED arg_${_vtgen_bad})
      message(FATAL_ERROR "vtgen_generate(): ${_vtgen_bad} shapes the ABI audit of a STABLE_ABI library; add STABLE_ABI X.Y or drop it")
    endif()
  endforeach()

  set(sources "")
  math(EXPR last "${shards} - 1")
  set(headers "${out_dir}/Functions.h" "${out_dir}/FunctionsBase.h")
  foreach(kind IN ITEMS VariableType ADInplaceOrViewType Functions)
    foreach(k RANGE 0 ${last})
      list(APPEND sources "${out_dir}/${kind}_${k}.cpp")
    endforeach()
  endforeach()
  list(APPEND sources "${out_dir}/RegisterSchema.cpp")
  foreach(k RANGE 0 ${last})
    list(APPEND headers "${out_dir}/Functions_${k}.h")  # the Node declarations of shard k
  endforeach()

  foreach(header IN LISTS arg_MANUAL_HEADERS)
    list(APPEND command --manual-header "${header}")
  endforeach()
  foreach(ns IN LISTS arg_USING_NAMESPACES)
    list(APPEND command --using-namespace "${ns}")
  endforeach()
  if(NOT arg_USE_TORCH)
    set(_vtgen_mode_args --stub-decls)  # the op declarations the stub headers include
  else()
    # The code follows the semantics of the torch it is built against (its release's rules and lists).
    _vtgen_find_torch("${python}")
    set(_vtgen_mode_args "")
    if(Torch_VERSION MATCHES "^([0-9]+)\\.([0-9]+)")
      set(_vtgen_mode_args --torch-version "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
    endif()
  endif()
  # --line-directives: a compiler error in a formula points at its derivatives.yaml line.
  _vtgen_generate_command("vtgen_build: generating autograd kernels for ${target}" --line-directives
                          ${_vtgen_mode_args})
  target_compile_features("${target}" PUBLIC cxx_std_17)
  set_target_properties("${target}" PROPERTIES VTGEN_OUTPUT_DIR "${out_dir}")
  # What vtgen_add_gradcheck_test() passes to `check` to read the same yaml.
  list(SUBLIST command 4 -1 input_args)
  list(FIND input_args --out cut)
  list(SUBLIST input_args 0 ${cut} input_args)
  list(APPEND input_args --namespace ${namespace})
  set_target_properties("${target}" PROPERTIES VTGEN_INPUT_ARGS "${input_args}" VTGEN_USE_TORCH "${arg_USE_TORCH}")
  if(arg_PRECOMPILE_HEADERS OR (arg_USE_TORCH AND NOT arg_NO_PRECOMPILE_HEADERS))
    # The headers every generated unit needs, and no more: a bigger header costs every unit of the
    # target (its pending template instantiations are redone per unit) and lengthens the one
    # serial step the whole build waits for.  RedispatchFunctions.h only for aten's kernels.
    set(pch_headers torch/csrc/autograd/VariableTypeUtils.h torch/library.h)
    if(namespace STREQUAL "aten")
      list(APPEND pch_headers ATen/RedispatchFunctions.h)
    endif()
    list(TRANSFORM pch_headers REPLACE "^(.+)$" "$<$<COMPILE_LANGUAGE:CXX>:<\\1>>")
    target_precompile_headers("${target}" PRIVATE ${pch_headers})
  endif()

  if(arg_USE_TORCH)
    _vtgen_generated_optimization("${sources}")
  endif()

  if(arg_REGISTER_BACKENDS)
    # A kernel the yaml names and no source defines: the link error names its yaml line.
    set_property(TARGET "${target}" PROPERTY RULE_LAUNCH_LINK
                 "\"${python}\" -m vtgen_build.linkcheck \"${out_dir}/NativeKernels.h\" --")
  endif()

  if(arg_USE_TORCH)
    _vtgen_find_torch("${python}")
    target_link_libraries("${target}" PUBLIC torch_cpu c10)
    # The torch headers' own language level (C++20 for torch 2.13), carried by its `torch` target.
    get_target_property(torch_std torch CXX_STANDARD)
    if(torch_std)
      target_compile_features("${target}" PUBLIC cxx_std_${torch_std})
    endif()
    _vtgen_link_discipline("${target}" "${type}")
    _vtgen_default_build_type()
  else()
    if(NOT IS_DIRECTORY "${vtgen_build_STUB_INCLUDE_DIR}")
      message(FATAL_ERROR "vtgen_generate(): the stub headers are missing from the vtgen_build package "
                          "(${vtgen_build_STUB_INCLUDE_DIR}); reinstall vtgen_build, or pass USE_TORCH")
    endif()
    target_link_libraries("${target}" PUBLIC vtgen::stub_aten)
  endif()
endfunction()

# vtgen_add_gradcheck_test()
# --------------------------
#   vtgen_add_gradcheck_test(<target>
#                            [NAME <test>]            # default vtgen_gradcheck_<target>
#                            [HINTS <file>...]        # sample hints of the library's constrained ops
#                            [OPS <op>...])           # default: every differentiable op
#
#   Adds a ctest test running `vtgen-build check --gradcheck --library <the built target>` on the
#   yaml given to vtgen_generate(<target> ... USE_TORCH): backward, double-backward and forward-AD
#   gradcheck of every differentiable op on samples made from its schema (and HINTS), through its
#   in-place and out= variants; a wrong formula fails the test at its derivatives.yaml line.
#   <target> must be a SHARED or MODULE library.
function(vtgen_add_gradcheck_test target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "NAME" "HINTS;OPS")
  if(arg_UNPARSED_ARGUMENTS)
    list(JOIN arg_UNPARSED_ARGUMENTS " " unparsed)
    message(FATAL_ERROR "vtgen_add_gradcheck_test(): unknown argument(s): ${unparsed}.  Known keywords: NAME HINTS OPS")
  endif()
  if(arg_KEYWORDS_MISSING_VALUES)
    list(JOIN arg_KEYWORDS_MISSING_VALUES ", " missing)
    message(FATAL_ERROR "vtgen_add_gradcheck_test(): missing value for ${missing}")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "vtgen_add_gradcheck_test(): '${target}' is not a target")
  endif()
  get_target_property(input_args "${target}" VTGEN_INPUT_ARGS)
  get_target_property(use_torch "${target}" VTGEN_USE_TORCH)
  get_target_property(type "${target}" TYPE)
  if(NOT input_args OR NOT use_torch)
    message(FATAL_ERROR "vtgen_add_gradcheck_test(): call vtgen_generate(${target} ... USE_TORCH) first")
  endif()
  if(NOT type MATCHES "^(SHARED|MODULE)_LIBRARY$")
    message(FATAL_ERROR "vtgen_add_gradcheck_test(): '${target}' is a ${type}; it must be a SHARED or MODULE library")
  endif()
  set(name "vtgen_gradcheck_${target}")
  if(DEFINED arg_NAME)
    set(name "${arg_NAME}")
  endif()
  set(command ${input_args} --out "${CMAKE_CURRENT_BINARY_DIR}/vtgen_gradcheck/${target}"
      --gradcheck --library "$<TARGET_FILE:${target}>")
  foreach(hints IN LISTS arg_HINTS)
    get_filename_component(hints "${hints}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND command --hints "${hints}")
  endforeach()
  foreach(op IN LISTS arg_OPS)
    list(APPEND command --op "${op}")
  endforeach()
  get_property(python GLOBAL PROPERTY _vtgen_python)
  add_test(NAME "${name}" COMMAND "${python}" -m vtgen_build check ${command})
endfunction()

# _vtgen_check_names(): a macro of vtgen_generate(): the names and the build request it hands the
# generator, checked at configure time by the generator's own rules (vtgen_build.engine.generate.
# configure_answers: the rules of `vtgen-build generate` and the setuptools hook), never by copies of
# them here; its answers: `_vtgen_library_files`, the files only a classic op library has, and
# `_vtgen_target_macro`, the TORCH_TARGET_VERSION of STABLE_ABI.
macro(_vtgen_check_names)
  set(_vtgen_names "")
  if(DEFINED arg_NAMESPACE)
    list(APPEND _vtgen_names --namespace "${arg_NAMESPACE}")
  endif()
  foreach(_vtgen_name IN LISTS arg_USING_NAMESPACES)
    list(APPEND _vtgen_names --using-namespace "${_vtgen_name}")
  endforeach()
  foreach(_vtgen_name IN LISTS arg_MANUAL_HEADERS)
    list(APPEND _vtgen_names --manual-header "${_vtgen_name}")
  endforeach()
  if(arg_REGISTER_BACKENDS)
    list(JOIN arg_REGISTER_BACKENDS "," _vtgen_name)
    list(APPEND _vtgen_names --register-backends "${_vtgen_name}")
  endif()
  if(DEFINED arg_FAKE_MODULE)
    list(APPEND _vtgen_names --fake-module "${arg_FAKE_MODULE}")
  endif()
  if(DEFINED arg_STABLE_ABI)
    list(APPEND _vtgen_names --stable-abi "${arg_STABLE_ABI}")
  endif()
  if(DEFINED arg_PYTHON_AUTOGRAD)
    list(APPEND _vtgen_names --python-autograd "${arg_PYTHON_AUTOGRAD}/_autograd.py")
  endif()
  if(DEFINED arg_PYTHON_FORMULAS)
    if(DEFINED arg_PYTHON_AUTOGRAD)  # copied beside the generated module (_vtgen_python_autograd)
      get_filename_component(_vtgen_name "${arg_PYTHON_FORMULAS}" NAME)
      list(APPEND _vtgen_names --python-formulas "${arg_PYTHON_AUTOGRAD}/${_vtgen_name}")
    else()
      list(APPEND _vtgen_names --python-formulas "${arg_PYTHON_FORMULAS}")
    endif()
  endif()
  set(_vtgen_library_files "")
  set(_vtgen_target_macro "")
  if(_vtgen_names)
    get_property(_vtgen_py GLOBAL PROPERTY _vtgen_python)
    execute_process(
      COMMAND "${_vtgen_py}" -c [=[
import sys
from vtgen_build.engine.generate import configure_answers
for line in configure_answers(sys.argv[1:]):
    print(line.replace("\n", " "))
]=] ${_vtgen_names}
      WORKING_DIRECTORY "${CMAKE_CURRENT_FUNCTION_LIST_DIR}"  # not the caller's: `-c` puts it on sys.path
      RESULT_VARIABLE _vtgen_rc OUTPUT_VARIABLE _vtgen_out ERROR_VARIABLE _vtgen_err
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
    if(NOT _vtgen_rc EQUAL 0)
      message(FATAL_ERROR "vtgen_generate(): checking the names with ${_vtgen_py} failed: ${_vtgen_err}")
    endif()
    string(REGEX MATCH "^[^\n]*" _vtgen_first "${_vtgen_out}")
    if(_vtgen_first MATCHES "^files\t(.*)$")  # no problem: the request's answers
      set(_vtgen_library_files "${CMAKE_MATCH_1}")
      if(_vtgen_out MATCHES "\nstable-macro\t([^\n]*)")
        set(_vtgen_target_macro "${CMAKE_MATCH_1}")
      endif()
    else()  # the first problem, as the generator says it
      string(REGEX MATCH "^([^\t]*)\t(.*)$" _vtgen_first "${_vtgen_first}")
      set(_vtgen_option "${CMAKE_MATCH_1}")
      if(_vtgen_option STREQUAL "-")  # said in CMake's words already
        message(FATAL_ERROR "vtgen_generate(): ${CMAKE_MATCH_2}")
      endif()
      string(REGEX REPLACE "^--[a-z-]+: " "" _vtgen_problem "${CMAKE_MATCH_2}")
      set(_vtgen_keyword_of--namespace NAMESPACE)
      set(_vtgen_keyword_of--using-namespace USING_NAMESPACES)
      set(_vtgen_keyword_of--manual-header MANUAL_HEADERS)
      set(_vtgen_keyword_of--register-backends REGISTER_BACKENDS)
      set(_vtgen_keyword_of--fake-module FAKE_MODULE)
      set(_vtgen_keyword "${_vtgen_keyword_of${_vtgen_option}}")
      if(_vtgen_keyword STREQUAL "NAMESPACE")
        message(FATAL_ERROR "vtgen_generate(): NAMESPACE must be an identifier, got '${arg_NAMESPACE}': ${_vtgen_problem}")
      endif()
      message(FATAL_ERROR "vtgen_generate(): ${_vtgen_keyword}: ${_vtgen_problem}")
    endif()
  endif()
endmacro()

# -- op libraries: backend registrations and fake kernels (REGISTER_BACKENDS, FAKE_MODULE) ----------
# _vtgen_backend_registrations(): a macro of vtgen_generate(): adds --register-backends and
# --fake-module to `command`, NativeKernels.h to `headers`, Register<key>.cpp and (the classic
# mode of an op library, NAMESPACE not aten) RegisterFunctionalize.cpp and AOTIShims.cpp to `sources`.
macro(_vtgen_backend_registrations)
  if(arg_REGISTER_BACKENDS)
    if(NOT arg_USE_TORCH)
      message(FATAL_ERROR "vtgen_generate(): REGISTER_BACKENDS needs USE_TORCH (the stubs declare no kernels)")
    endif()
    foreach(_vtgen_key IN LISTS arg_REGISTER_BACKENDS)  # checked by _vtgen_check_names()
      list(APPEND sources "${out_dir}/Register${_vtgen_key}.cpp")
    endforeach()
    # The classic mode of an op library: its out= operators' Functionalize kernels and its
    # operators' AOTInductor C shims (the generator's rule, answered by _vtgen_check_names())
    foreach(_vtgen_file IN LISTS _vtgen_library_files)
      if(_vtgen_file MATCHES "\\.h$")
        list(APPEND headers "${out_dir}/${_vtgen_file}")
      else()
        list(APPEND sources "${out_dir}/${_vtgen_file}")
      endif()
    endforeach()
    list(JOIN arg_REGISTER_BACKENDS "," _vtgen_keys)
    list(APPEND command --register-backends "${_vtgen_keys}")
    list(APPEND headers "${out_dir}/NativeKernels.h")
  endif()
  if(DEFINED arg_FAKE_MODULE)
    list(APPEND command --fake-module "${arg_FAKE_MODULE}")
  endif()
endmacro()

# _vtgen_python_api(): a macro of vtgen_generate() (both modes): with PYTHON_API <dest>, adds
# --python-api to `command`, the typed API's two files to `headers` and their install() to <dest>.
macro(_vtgen_python_api)
  if(DEFINED arg_PYTHON_API)
    if(IS_ABSOLUTE "${arg_PYTHON_API}" OR arg_PYTHON_API MATCHES "(^|/)\\.\\.(/|$)")
      message(FATAL_ERROR "vtgen_generate(): PYTHON_API must be a relative install destination "
                          "(a package directory such as mypkg/ops), got '${arg_PYTHON_API}'")
    endif()
    list(APPEND command --python-api "${out_dir}/python_api")
    list(APPEND headers "${out_dir}/python_api/__init__.py" "${out_dir}/python_api/py.typed")
    install(FILES "${out_dir}/python_api/__init__.py" "${out_dir}/python_api/py.typed" DESTINATION "${arg_PYTHON_API}")
  endif()
endmacro()

# _vtgen_generate_command(<comment> <option>...): the generate command of vtgen_generate(), both modes:
# the output options with <option>... (the mode's), what REGISTER_BACKENDS, PYTHON_API and
# PYTHON_AUTOGRAD add (to `command`, `sources`, `headers`, `inputs`), and its build step.
macro(_vtgen_generate_command comment)
  list(APPEND command --out "${out_dir}" --shards ${shards} --namespace ${namespace} ${ARGN}
       --depfile "${depfile}" --stamp "${stamp}")
  _vtgen_backend_registrations()  # appends to command, sources and headers
  _vtgen_python_api()  # appends to command and headers
  _vtgen_python_autograd()  # appends to command, headers and inputs
  _vtgen_add_generate_step("${target}" "${comment}")
endmacro()

# _vtgen_add_generate_step(<target> <comment>): for vtgen_generate() (both modes), from its variables:
# the build step running `command` (it writes `sources`, `headers`, the `depfile` of what it read
# and the `stamp`), rerun when one of `inputs`, the depfile's files or the options file changes; the
# stamp and `sources` become sources of <target>, `out_dir` part of its include path.
function(_vtgen_add_generate_step target comment)
  # Everything that shapes the output but is not a file the generator reads
  # (vtgen_build's version, interpreter, options) goes into this file,
  # rewritten only when it changes: a new option or an upgrade reruns the
  # generator under Make too (Ninja reruns on a changed command line anyway).
  # The files it reads -- the yaml, and vtgen_build's templates, data and own
  # modules -- are in the depfile it writes: an upgrade in place reruns it too
  # (under pip's build isolation a rerun writes nothing that did not change).
  set(options_file "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.dir/vtgen.options")
  get_property(version GLOBAL PROPERTY _vtgen_version)
  list(JOIN command "\n" command_text)
  _vtgen_write_if_changed("${options_file}" "vtgen_build ${version}\n${command_text}\n")
  add_custom_command(
    OUTPUT "${stamp}"
    BYPRODUCTS ${sources} ${headers}
    COMMAND ${command}
    DEPENDS ${inputs} "${options_file}"
    DEPFILE "${depfile}"
    COMMENT "${comment}"
    VERBATIM)
  # The stamp is a source of the target so the command is attached to it (a
  # byproduct alone does not attach it); it is not compiled.
  target_sources("${target}" PRIVATE "${stamp}" ${sources})
  target_include_directories("${target}" PUBLIC "$<BUILD_INTERFACE:${out_dir}>")
endfunction()

# _vtgen_write_if_changed(<file> <text>): keep the file's mtime when its text is the same.
function(_vtgen_write_if_changed file text)
  if(EXISTS "${file}")
    file(READ "${file}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${file}" "${text}")
endfunction()

# _vtgen_default_shards(<native_functions> <out-var>): the SHARDS default, one shard per 32
# entries of the yaml, 1..10 -- the rule of vtgen_build.engine.generate.default_shards.  The file
# is a configure dependency: an edit that changes the count reconfigures.
function(_vtgen_default_shards native_functions out_var)
  if(NOT EXISTS "${native_functions}")
    message(FATAL_ERROR "vtgen_generate(): NATIVE_FUNCTIONS ${native_functions} does not exist when CMake "
                        "configures, so the default SHARDS cannot be counted: give SHARDS <n>")
  endif()
  file(STRINGS "${native_functions}" entries REGEX "^-[ \t]+func:")
  list(LENGTH entries count)
  math(EXPR shards "(${count} + 31) / 32")
  if(shards LESS 1)
    set(shards 1)
  elseif(shards GREATER 10)
    set(shards 10)
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${native_functions}")
  set(${out_var} "${shards}" PARENT_SCOPE)
endfunction()

# _vtgen_generated_optimization(<sources>): the optimisation of the generated units in the optimised
# configurations (Release, RelWithDebInfo): VTGEN_GENERATED_OPTIMIZATION when the caller defines it
# (empty: the build type's own flags), else -O1 with GCC or Clang.  The units are glue calling into
# libtorch: -O1 compiles them faster and ran the sample's ops as fast as -O3 (bench/README.md).
# The flags come after the build type's, so they win; the precompiled header stays valid.
function(_vtgen_generated_optimization sources)
  if(DEFINED VTGEN_GENERATED_OPTIMIZATION)
    set(flags "${VTGEN_GENERATED_OPTIMIZATION}")
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "^(GNU|Clang|AppleClang)$")
    set(flags -O1)
  else()
    set(flags "")
  endif()
  list(TRANSFORM flags REPLACE "^(.+)$" "$<$<CONFIG:Release,RelWithDebInfo>:\\1>")
  if(flags)
    set_property(SOURCE ${sources} APPEND PROPERTY COMPILE_OPTIONS ${flags})
  endif()
endfunction()

# _vtgen_default_build_type(): Release when the user chose no build type (single-config
# generators only; a value the user set, even `None`, is never replaced).
function(_vtgen_default_build_type)
  get_property(multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(NOT multi_config AND "${CMAKE_BUILD_TYPE}" STREQUAL "")
    message(STATUS "vtgen_generate(): CMAKE_BUILD_TYPE is empty; building Release (set CMAKE_BUILD_TYPE to choose)")
    set(CMAKE_BUILD_TYPE Release CACHE STRING "Choose the type of build (vtgen_generate(): Release when empty)" FORCE)
  endif()
endfunction()

# _vtgen_input_path(<keyword> <path> <out-var>): absolute path of an input file.
function(_vtgen_input_path keyword path out_var)
  get_filename_component(path "${path}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT EXISTS "${path}")
    get_source_file_property(generated "${path}" GENERATED)
    if(NOT generated)
      message(FATAL_ERROR "vtgen_generate(): ${keyword}: no such file: ${path}")
    endif()
  endif()
  set(${out_var} "${path}" PARENT_SCOPE)
endfunction()

# _vtgen_locate_torch(<python> <keyword> <hint>): where the generator's interpreter has torch, from its
# package metadata (torch is not imported): `_vtgen_torch_version`, `_vtgen_torch_include`,
# `_vtgen_torch_lib` and `_vtgen_torch_prefix` (torch.utils.cmake_prefix_path: its CMake packages).
# The one way both modes find torch; <keyword> (USE_TORCH, STABLE_ABI) and <hint> go into its error.
macro(_vtgen_locate_torch python keyword hint)
  execute_process(
    COMMAND "${python}" -c [=[
import importlib.metadata, importlib.util, os, sys
try:
    version = importlib.metadata.version("torch")
except importlib.metadata.PackageNotFoundError:
    sys.exit("the generator's interpreter has no torch installed (" + sys.executable + ")")
package = importlib.util.find_spec("torch").submodule_search_locations[0]
print(version)
print(os.path.join(package, "include"))
print(os.path.join(package, "lib"))
print(os.path.join(package, "share", "cmake"))
]=]
    RESULT_VARIABLE _vtgen_rc OUTPUT_VARIABLE _vtgen_out ERROR_VARIABLE _vtgen_err
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT _vtgen_rc EQUAL 0)
    string(REGEX REPLACE "^.*\n" "" _vtgen_err "${_vtgen_err}")  # the last line: the reason
    message(FATAL_ERROR "vtgen_generate(): ${keyword}: ${_vtgen_err}${hint}")
  endif()
  string(REPLACE "\n" ";" _vtgen_out "${_vtgen_out}")
  list(GET _vtgen_out 0 _vtgen_torch_version)
  list(GET _vtgen_out 1 _vtgen_torch_include)
  list(GET _vtgen_out 2 _vtgen_torch_lib)
  list(GET _vtgen_out 3 _vtgen_torch_prefix)
endmacro()

# _vtgen_find_torch(<python>): the `torch_cpu` and `c10` targets, from find_package(Torch); when
# Torch_DIR is not set, at the torch of the generator's interpreter (_vtgen_locate_torch).  Quiet:
# the CPU wheel links kineto into libtorch_cpu, so TorchConfig's "library kineto not found" warning
# is pre-empted.
macro(_vtgen_find_torch python)
  if(NOT TARGET torch_cpu)
    if(NOT Torch_DIR)
      _vtgen_locate_torch("${python}" USE_TORCH "; install torch there or set Torch_DIR")
      set(Torch_DIR "${_vtgen_torch_prefix}/Torch")
    endif()
    if(NOT DEFINED kineto_LIBRARY AND EXISTS "${Torch_DIR}/../../../lib/${CMAKE_SHARED_LIBRARY_PREFIX}torch_cpu${CMAKE_SHARED_LIBRARY_SUFFIX}")
      get_filename_component(kineto_LIBRARY
          "${Torch_DIR}/../../../lib/${CMAKE_SHARED_LIBRARY_PREFIX}torch_cpu${CMAKE_SHARED_LIBRARY_SUFFIX}" ABSOLUTE)
    endif()
    find_package(Torch CONFIG QUIET)
    if(NOT TARGET torch_cpu OR NOT TARGET c10)
      message(FATAL_ERROR "vtgen_generate(): USE_TORCH: find_package(Torch) found no `torch_cpu`/`c10` targets "
                          "(Torch_DIR=${Torch_DIR}); set Torch_DIR to `python -c 'import torch.utils; "
                          "print(torch.utils.cmake_prefix_path)'`/Torch")
    endif()
  endif()
endmacro()

# _vtgen_link_discipline(<target> <type>): what a library holding generated kernels needs
# when it runs against libtorch.  Hidden visibility (unless the target sets its own), so our
# Node classes and helpers -- same-named ones exist inside libtorch_cpu -- are ours alone;
# for a shared library on Linux, -Bsymbolic binds its references to its own definitions and
# --no-undefined proves at link time that everything else comes from the torch libraries.
# Objects of an OBJECT or STATIC library get the visibility; the shared library they end up
# in needs the two link options (see the README).
function(_vtgen_link_discipline target type)
  foreach(property IN ITEMS CXX_VISIBILITY_PRESET VISIBILITY_INLINES_HIDDEN)
    get_target_property(value "${target}" ${property})
    if(value STREQUAL "value-NOTFOUND")
      if(property STREQUAL "CXX_VISIBILITY_PRESET")
        set_property(TARGET "${target}" PROPERTY ${property} hidden)
      else()
        set_property(TARGET "${target}" PROPERTY ${property} ON)
      endif()
    endif()
  endforeach()
  if(type MATCHES "^(SHARED|MODULE)_LIBRARY$" AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
    target_link_options("${target}" PRIVATE "LINKER:-Bsymbolic" "LINKER:--no-undefined")
  endif()
endfunction()

# -- the stable-ABI mode (STABLE_ABI X.Y) --------------------------------------------------------
# _vtgen_generate_stable(): a macro of vtgen_generate(), run instead of the classic mode's body.
# The target gets RegisterSchema.cpp (STABLE_TORCH_LIBRARY) and one Register<Key>.cpp per
# REGISTER_BACKENDS key (STABLE_TORCH_LIBRARY_IMPL, boxed kernels), NativeKernels.h on stable types,
# the torch headers of the generator's interpreter, -DTORCH_TARGET_VERSION=(major << 56) | (minor << 48) for
# X.Y (PUBLIC: the author's sources get it too), hidden visibility, libtorch_cpu as a needed library
# (by soname: the stable shim's functions live there), and after linking the ABI audit
# (`vtgen-build abi-audit`): an undefined symbol that is not a stable C-shim function or the C/C++
# runtime fails the build, naming the symbol, its object file and the op whose kernel pulled it in.
macro(_vtgen_generate_stable)
  foreach(_vtgen_bad IN ITEMS USE_TORCH PRECOMPILE_HEADERS)
    if(arg_${_vtgen_bad})
      message(FATAL_ERROR "vtgen_generate(): STABLE_ABI builds against torch's stable headers only; drop ${_vtgen_bad}")
    endif()
  endforeach()
  # The torch the build compiles against (its metadata and include directory; torch is not imported);
  # the target was checked against it by _vtgen_check_names() (not before 2.10, not after that torch),
  # which also gave its TORCH_TARGET_VERSION (_vtgen_target_macro).
  _vtgen_locate_torch("${python}" STABLE_ABI "")
  set(sources "${out_dir}/RegisterSchema.cpp")
  set(headers "")
  set(arg_USE_TORCH TRUE)  # for _vtgen_backend_registrations(): real headers, not the stubs
  # The stable ABI has no C++ autograd: PYTHON_AUTOGRAD gives the ops' autograd as generated Python.
  _vtgen_generate_command(
    "vtgen_build: generating stable-ABI registrations for ${target} (stable-abi ${arg_STABLE_ABI})"
    --stable-abi "${arg_STABLE_ABI}" --torch-version "${_vtgen_torch_version}")
  target_include_directories("${target}" SYSTEM PRIVATE "${_vtgen_torch_include}")
  target_compile_definitions("${target}" PUBLIC "TORCH_TARGET_VERSION=${_vtgen_target_macro}")
  target_compile_features("${target}" PUBLIC cxx_std_17)
  # One section per function: the audit follows relocations from each kernel, not from a whole object.
  target_compile_options("${target}" PRIVATE "$<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-ffunction-sections>")
  set_target_properties("${target}" PROPERTIES VTGEN_OUTPUT_DIR "${out_dir}" VTGEN_STABLE_ABI "${arg_STABLE_ABI}")
  get_target_property(_vtgen_value "${target}" CXX_VISIBILITY_PRESET)
  if(NOT _vtgen_value)
    set_property(TARGET "${target}" PROPERTY CXX_VISIBILITY_PRESET hidden)
  endif()
  get_target_property(_vtgen_value "${target}" VISIBILITY_INLINES_HIDDEN)
  if(_vtgen_value STREQUAL "_vtgen_value-NOTFOUND")
    set_property(TARGET "${target}" PROPERTY VISIBILITY_INLINES_HIDDEN ON)
  endif()
  _vtgen_default_build_type()
  set(_vtgen_allow "")
  foreach(_vtgen_value IN LISTS arg_ABI_AUDIT_ALLOW)
    list(APPEND _vtgen_allow --allow "${_vtgen_value}")
  endforeach()
  foreach(_vtgen_value IN LISTS arg_ABI_AUDIT_ALLOW_LIBRARIES)
    list(APPEND _vtgen_allow --allow-library "${_vtgen_value}")
  endforeach()
  if(type MATCHES "^(SHARED|MODULE)_LIBRARY$")
    # Needed by soname only (libtorch_cpu.so, already loaded by `import torch` of any release): the
    # stable shim's functions live there, and torch loads its libraries without RTLD_GLOBAL.
    target_link_libraries("${target}" PRIVATE "${_vtgen_torch_lib}/${CMAKE_SHARED_LIBRARY_PREFIX}torch_cpu${CMAKE_SHARED_LIBRARY_SUFFIX}")
    add_custom_command(TARGET "${target}" POST_BUILD
      COMMAND "${python}" -m vtgen_build abi-audit "$<TARGET_FILE:${target}>"
              --kernels "${out_dir}/NativeKernels.h" --torch-include "${_vtgen_torch_include}"
              ${_vtgen_allow} --objects "$<TARGET_OBJECTS:${target}>"
      COMMENT "vtgen_build: ABI audit of ${target} (only stable C-shim symbols may be undefined)"
      COMMAND_EXPAND_LISTS VERBATIM)
  endif()
endmacro()
