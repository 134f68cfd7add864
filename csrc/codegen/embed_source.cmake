# Writes OUTPUT, a header holding INPUT's text as the raw string literal
# NAME in namespace smelt::codegen (cmake -DINPUT=.. -DOUTPUT=.. -DNAME=.. -P).
file(READ "${INPUT}" text)
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${input_name} by embed_source.cmake: edit the source, not this.\n"
  "#pragma once\n\nnamespace smelt::codegen {\n"
  "constexpr const char* ${NAME} = R\"smelt_embedded(${text})smelt_embedded\";\n"
  "}  // namespace smelt::codegen\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
