# vtgen_buildConfigVersion.cmake -- the version of this vtgen_build for find_package().
#
# The version is read from the package itself (`__version__` in
# <package>/__init__.py), so it cannot drift from the Python package.  Compatibility: while the major version is 0
# a minor release may break, so 0.y.* accepts requests for 0.y; from 1.0 on,
# the same major version is compatible.  Version ranges (`0.1...<0.3`) work.
# Nothing here is architecture-specific (Python and headers only).

# <package>/cmake/ in a wheel; <checkout>/cmake/ beside <checkout>/vtgen_build in a checkout.
set(_vtgen_init "${CMAKE_CURRENT_LIST_DIR}/../__init__.py")
if(NOT EXISTS "${_vtgen_init}")
  set(_vtgen_init "${CMAKE_CURRENT_LIST_DIR}/../vtgen_build/__init__.py")
endif()
file(STRINGS "${_vtgen_init}" _vtgen_version_line
     REGEX "^__version__ = \"[0-9]+\\.[0-9]+\\.[0-9]+[^\"]*\"$" LIMIT_COUNT 1)
if(NOT _vtgen_version_line MATCHES "\"([0-9]+\\.[0-9]+\\.[0-9]+)[^\"]*\"")
  set(PACKAGE_VERSION "0")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
  message(WARNING "vtgen_build: no `__version__ = \"X.Y.Z\"` in ${_vtgen_init}")
  unset(_vtgen_version_line)
  unset(_vtgen_init)
  return()
endif()
set(PACKAGE_VERSION "${CMAKE_MATCH_1}")
unset(_vtgen_version_line)
unset(_vtgen_init)

string(REPLACE "." ";" _vtgen_parts "${PACKAGE_VERSION}")
list(GET _vtgen_parts 0 _vtgen_major)
list(GET _vtgen_parts 1 _vtgen_minor)
unset(_vtgen_parts)

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(PACKAGE_FIND_VERSION_RANGE)
  # find_package(vtgen_build 0.1...0.3): inside the range, as CMake defines it.
  if(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION_MIN
     AND ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE" AND PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX)
          OR (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE" AND PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(NOT DEFINED PACKAGE_FIND_VERSION OR PACKAGE_FIND_VERSION STREQUAL "")
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION
       AND PACKAGE_FIND_VERSION_MAJOR EQUAL _vtgen_major
       AND (NOT _vtgen_major EQUAL 0 OR PACKAGE_FIND_VERSION_COUNT LESS 2
            OR PACKAGE_FIND_VERSION_MINOR EQUAL _vtgen_minor))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
if(PACKAGE_FIND_VERSION AND PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
unset(_vtgen_major)
unset(_vtgen_minor)
