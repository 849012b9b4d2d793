# atm.cmake -- helpers shared by the module folders and the test suite

# A test is declared once, with everything about it: its labels, where it runs (OPTIMISED:
# the optimised build, for tests that solve integer programs, calibrate, profile for real or
# run end to end, 900 s; else the sanitised build, 300 s), its cost (COST: seconds in the
# optimised build on 2 cores, so that ctest -j starts the longest first on a clean clone) and
# its parts.

# atm_test_props(NAME [LABELS ...] [OPTIMISED] [COST S] [TIMEOUT S] [ENV ...] [SKIP77]) -- the
# properties of ctest test NAME (its timeout defaults as above)
function(atm_test_props name)
  cmake_parse_arguments(T "OPTIMISED;SKIP77" "COST;TIMEOUT" "LABELS;ENV" ${ARGN})
  if(T_OPTIMISED)
    list(APPEND T_LABELS optimised)
  endif()
  if(NOT T_TIMEOUT)
    if(T_OPTIMISED)
      set(T_TIMEOUT 900)
    else()
      set(T_TIMEOUT 300)
    endif()
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
  if(T_SKIP77)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
  endif()
  if(T_COST)
    set_tests_properties(${name} PROPERTIES COST ${T_COST})
  endif()
endfunction()

# atm_add_test(AREA UNIT [LIBS ...] [LABELS ...] [OPTIMISED] [COST S] [TIMEOUT S]
#              [PARTS MAIN PART[:COST] ...]) -- tests/AREA/test_UNIT.c as one cmocka executable,
# registered with ctest as AREA.UNIT. Exit 77 means skipped. With PARTS, the executable's
# named groups of cases (tests/common/test_parts.h) each run as a test of their own, side by
# side under ctest -j: MAIN as AREA.UNIT, every other PART as AREA.UNIT_PART (its cost after
# a colon).
function(atm_add_test area unit)
  cmake_parse_arguments(T "OPTIMISED" "TIMEOUT;COST" "LIBS;LABELS;PARTS" ${ARGN})
  set(target test_${area}_${unit})
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/${area}/test_${unit}.c)
  target_link_libraries(${target} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  set(env "ATM_SOURCE_DIR=${PROJECT_SOURCE_DIR};ATM_BINARY_DIR=${PROJECT_BINARY_DIR};OMP_WAIT_POLICY=passive")
  set(opt)
  if(T_OPTIMISED)
    set(opt OPTIMISED)
  endif()
  if(T_TIMEOUT)
    list(APPEND opt TIMEOUT ${T_TIMEOUT})
  endif()
  if(NOT T_PARTS)
    add_test(NAME ${area}.${unit} COMMAND ${target})
    atm_test_props(${area}.${unit} SKIP77 LABELS ${area} ${T_LABELS} ${opt} ENV "${env}"
                   COST ${T_COST})
    return()
  endif()
  list(POP_FRONT T_PARTS main)
  add_test(NAME ${area}.${unit} COMMAND ${target})
  atm_test_props(${area}.${unit} SKIP77 LABELS ${area} ${T_LABELS} ${opt}
                 ENV "${env};ATM_TEST_PART=${main}" COST ${T_COST})
  foreach(part ${T_PARTS})
    string(REPLACE ":" ";" pc "${part}")
    list(GET pc 0 pname)
    list(LENGTH pc n)
    set(cost)
    if(n GREATER 1)
      list(GET pc 1 cost)
    endif()
    add_test(NAME ${area}.${unit}_${pname} COMMAND ${target})
    atm_test_props(${area}.${unit}_${pname} SKIP77 LABELS ${area} ${T_LABELS} ${opt}
                   ENV "${env};ATM_TEST_PART=${pname}" COST ${cost})
  endforeach()
endfunction()

# atm_script_test(NAME COMMAND ... [LABELS ...] [OPTIMISED] [COST S] [TIMEOUT S] [ENV ...]
#                 [SKIP77]) -- a test that runs a script or a command rather than a cmocka
# executable, declared as atm_add_test's are
function(atm_script_test name)
  cmake_parse_arguments(T "OPTIMISED;SKIP77" "COST;TIMEOUT" "COMMAND;LABELS;ENV" ${ARGN})
  add_test(NAME ${name} COMMAND ${T_COMMAND})
  set(opt)
  foreach(flag OPTIMISED SKIP77)
    if(T_${flag})
      list(APPEND opt ${flag})
    endif()
  endforeach()
  foreach(val COST TIMEOUT)
    if(T_${val})
      list(APPEND opt ${val} ${T_${val}})
    endif()
  endforeach()
  atm_test_props(${name} LABELS ${T_LABELS} ${opt} ENV "${T_ENV}")
endfunction()
