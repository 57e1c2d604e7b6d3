# Third-party libraries, all from Debian packages (deploy/install-deps.sh installs them).
# Each becomes an IMPORTED target so modules link by name and never see include paths.
find_package(PkgConfig REQUIRED)
pkg_check_modules(UV REQUIRED IMPORTED_TARGET libuv>=1.44)
pkg_check_modules(PROTOBUF_C REQUIRED IMPORTED_TARGET libprotobuf-c>=1.4)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3>=3.35)
# gschedd's HTTP server (/metrics, /api/v1): 0.9.71 brought enum MHD_Result; Debian 12 has 0.9.75.
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd>=0.9.71)
# `gsched top`'s full-screen view (the wide-character build, for the bars' block glyphs).
pkg_check_modules(NCURSES REQUIRED IMPORTED_TARGET ncursesw>=6)
pkg_check_modules(CRITERION IMPORTED_TARGET criterion>=2.4)
# The cluster key's HMAC, nonces and constant-time compare (proto/auth.c): OpenSSL's libcrypto.
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto>=3.0)
# The workers' cgroup v2 device programs (worker/devbpf.c): libbpf loads and attaches them.
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET libbpf>=0.7)
# POSIX ACLs of the workers' dataset caches (worker/data_access.c): each source's readers.
pkg_check_modules(LIBACL REQUIRED IMPORTED_TARGET libacl>=2.2)

# MUNGE (libmunge): the credentials of CLIs on login nodes (proto/cred.c, scheduler.cli_port,
# GSCHED_SERVER); optional: without it neither gschedd nor gsched speaks to the other over TCP.
option(GSCHED_MUNGE "Use libmunge when it is found (OFF: build as if it were not)" ON)
set(GSCHED_HAVE_MUNGE OFF)
if(GSCHED_MUNGE)
  pkg_check_modules(MUNGE IMPORTED_TARGET munge)
  if(MUNGE_FOUND)
    set(GSCHED_HAVE_MUNGE ON)
  endif()
endif()

# PMIx (libpmix): the workers' PMIx server for srun --mpi=pmix steps (worker/pmix.c);
# optional: without it such a step fails to launch, saying so.
option(GSCHED_PMIX "Use libpmix when it is found (OFF: build as if it were not)" ON)
set(GSCHED_HAVE_PMIX OFF)
if(GSCHED_PMIX)
  pkg_check_modules(PMIX IMPORTED_TARGET pmix)
  if(PMIX_FOUND)
    set(GSCHED_HAVE_PMIX ON)
  endif()
endif()

find_program(PROTOC_C NAMES protoc-c protoc-gen-c REQUIRED)
find_package(Python3 COMPONENTS Interpreter)

# OpenMP threads the CPU kernels (kernels/); optional: without it they run single-threaded.
option(GSCHED_OPENMP "Use OpenMP threads in the CPU kernels when the compiler has it" ON)
set(GSCHED_HAVE_OPENMP OFF)
if(GSCHED_OPENMP)
  find_package(OpenMP COMPONENTS C)
  if(OpenMP_C_FOUND)
    set(GSCHED_HAVE_OPENMP ON)
  endif()
endif()
