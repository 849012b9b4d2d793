# atm.cmake -- helpers shared by the module folders and the test suite

# atm_add_test(AREA UNIT [LIBS ...] [LABELS ...]) -- tests/AREA/test_UNIT.c as one
# cmocka executable, registered with ctest as AREA.UNIT. Exit 77 means skipped.
function(atm_add_test area unit)
  cmake_parse_arguments(T "" "TIMEOUT" "LIBS;LABELS" ${ARGN})
  set(target test_${area}_${unit})
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/${area}/test_${unit}.c)
  target_link_libraries(${target} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  add_test(NAME ${area}.${unit} COMMAND ${target})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${area}.${unit} PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT ${T_TIMEOUT}
    LABELS "${area};${T_LABELS}"
    ENVIRONMENT "ATM_SOURCE_DIR=${PROJECT_SOURCE_DIR};ATM_BINARY_DIR=${PROJECT_BINARY_DIR};OMP_WAIT_POLICY=passive")
endfunction()

# atm_test_split(AREA UNIT PART [TIMEOUT S] PART_ENV ... REST_ENV ...) -- a second ctest test,
# AREA.UNIT_PART, running test_AREA_UNIT with PART_ENV in its environment, while AREA.UNIT gets
# REST_ENV: so that ctest -j runs the two halves of a long executable side by side. The
# variables that pick cases are ATM_TEST_FILTER and ATM_TEST_SKIP (cmocka patterns,
# tests/common/test_parts.h) and, for the optimizer's groups, ATM_TEST_SOLVER
# (tests/optimizer/per_solver.h); between them the two tests must run every case once.
function(atm_test_split area unit part)
  cmake_parse_arguments(T "" "TIMEOUT" "PART_ENV;REST_ENV" ${ARGN})
  get_test_property(${area}.${unit} ENVIRONMENT env)
  get_test_property(${area}.${unit} LABELS labels)
  if(NOT T_TIMEOUT)
    get_test_property(${area}.${unit} TIMEOUT T_TIMEOUT)
  endif()
  add_test(NAME ${area}.${unit}_${part} COMMAND test_${area}_${unit})
  set_tests_properties(${area}.${unit}_${part} PROPERTIES
    SKIP_RETURN_CODE 77
    TIMEOUT ${T_TIMEOUT}
    LABELS "${labels}"
    ENVIRONMENT "${env};${T_PART_ENV}")
  set_tests_properties(${area}.${unit} PROPERTIES ENVIRONMENT "${env};${T_REST_ENV}")
endfunction()
