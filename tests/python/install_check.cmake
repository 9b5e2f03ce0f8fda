# Python.Install (tests/CMakeLists.txt): `cmake --install BUILD --prefix PREFIX`, then
# install_check.py imports the package from PREFIX with PYTHON, in PREFIX, with no
# INFERLAB_DATA_DIR. Python.Pytest then runs against the same install.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX}
                RESULT_VARIABLE installed OUTPUT_QUIET)
if(NOT installed EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} --prefix ${PREFIX} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=INFERLAB_DATA_DIR
                        PYTHONPATH=${PREFIX}/lib/python3/dist-packages PYTHONDONTWRITEBYTECODE=1
                        ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/install_check.py ${PREFIX}
                WORKING_DIRECTORY ${PREFIX} RESULT_VARIABLE imported)
if(NOT imported EQUAL 0)
  message(FATAL_ERROR "import inferlab from ${PREFIX} failed")
endif()
