// The two readers behind ParseStacksJson (stacks_file.h), visible to this package only.
//
// ParseStacksStream is the fast path: one pass over the text straight into a StacksFile, with no
// JSON DOM. It reads the files our writer (WriteStacksJson) produces, and any text of the same
// shape, and accepts a text only when the reference accepts it and gives the same StacksFile.
// Anything else (a syntax error, a field out of range, a member it does not know or sees twice,
// an escape in a string, a number that is not a plain integer) makes it give up, and
// ParseStacksJson then runs the reference, so an input is refused exactly as before, with the
// same message. stacks_stream_test compares the two on random and hostile inputs.
//
// ParseStacksDom is the reference: the bounded JSON DOM of json_reader.h, then the field checks.
#ifndef XTIMER_STACKTRACE_STACKS_STREAM_H_
#define XTIMER_STACKTRACE_STACKS_STREAM_H_

#include <string>

#include "stacktrace/stacks_file.h"

namespace xtimer {
namespace stacktrace {

// True with *out filled when the fast path read `text` (under kMaxFileBytes); false when the
// reference must decide (*out is then unspecified). The frames' and threads' strings and vectors
// already in *out are reused, so a reader that parses file after file into one StacksFile
// allocates almost nothing once it has seen a file of the usual shape.
bool ParseStacksStream(const std::string& text, StacksFile* out);

// The reference: false with *error naming the field on failure (see ParseStacksJson).
bool ParseStacksDom(const std::string& text, StacksFile* out, std::string* error);

}  // namespace stacktrace
}  // namespace xtimer

#endif  // XTIMER_STACKTRACE_STACKS_STREAM_H_
