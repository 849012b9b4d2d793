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
