// The host runtime header pto-isa's NPU test kernels include (`#include "acl/acl.h"`, CANN's
// AscendCL): ptopipe compiles the host function that launches a kernel (`kernel<<<...>>>(...)`)
// but never runs it, so it needs the runtime's types only, which pto-inst.hpp declares as
// pto-isa's CPU simulator does (aclFloat16, aclrtStream).  Written for ptopipe, not CANN's header.
#ifndef PTOPIPE_ACL_ACL_H
#define PTOPIPE_ACL_ACL_H
#include <pto/pto-inst.hpp>
#endif
