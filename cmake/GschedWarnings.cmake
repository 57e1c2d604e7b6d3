# The warning set from shared/STYLE.md, applied to gsched's own targets only
# (never to generated protobuf-c code's consumers beyond what it builds clean under).
set(GSCHED_C_WARNINGS
    -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wformat=2 -Wvla -Wimplicit-fallthrough)
if(GSCHED_WERROR)
  list(APPEND GSCHED_C_WARNINGS -Werror)
endif()

if(GSCHED_SANITIZE)
  # C only: nvcc does not take these flags, and device code is checked by its CPU twin.
  add_compile_options($<$<COMPILE_LANGUAGE:C>:-fsanitize=${GSCHED_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:C>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:C>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${GSCHED_SANITIZE})
endif()

# Every gsched C target calls this: warnings, the POSIX feature level libuv needs under
# -std=c11, and the include roots ("common/buf.h", "proto/frame.h", "gsched_config.h").
function(gsched_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:${GSCHED_C_WARNINGS}>)
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR})
endfunction()
