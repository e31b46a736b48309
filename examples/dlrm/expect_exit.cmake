# Runs EXE with ARGS ("|"-separated) and passes only when it exits with CODE and its output
# (stdout + stderr) matches REGEX. Used by the dlrm CLI's bad-input tests.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${EXE} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "${CODE}")
  message(FATAL_ERROR "expected exit code ${CODE}, got ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match: ${REGEX}")
endif()
