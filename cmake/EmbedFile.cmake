# Run as `cmake -DIN=file -DOUT=header -DNAME=kName [-DTOKEN=text] -P EmbedFile.cmake`: writes a
# header holding IN's bytes as `inline constexpr char NAME[]` (NUL-terminated) and NAME##Bytes, so
# that a file (the HTML report's template) is compiled into the program and no install path is
# needed at run time. With TOKEN, the build fails unless IN holds it exactly once.
file(READ "${IN}" _content HEX)
string(LENGTH "${_content}" _hex_chars)
math(EXPR _bytes "${_hex_chars} / 2")
if(DEFINED TOKEN)
  file(READ "${IN}" _text)
  string(FIND "${_text}" "${TOKEN}" _first)
  string(FIND "${_text}" "${TOKEN}" _last REVERSE)
  if(_first EQUAL -1 OR NOT _first EQUAL _last)
    message(FATAL_ERROR "${IN}: must hold ${TOKEN} exactly once (where the report's data goes)")
  endif()
endif()
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," _array "${_content}")
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by cmake/EmbedFile.cmake: do not edit.\n#pragma once\n#include <cstddef>\n"
  "namespace opcost {\ninline constexpr char ${NAME}[] = {${_array}'\\0'};\n"
  "inline constexpr std::size_t ${NAME}Bytes = ${_bytes};\n}  // namespace opcost\n")
# Only a changed header is replaced: what includes it is not rebuilt for nothing.
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
