package read

import "github.com/gpuops/gpuops/pkg/bundle"

// refused says why a request was refused, for a note: the user may not
// (verb what), or, read from --from's input (pkg/bundle), the input holds
// none of it. Either way the reader goes on without it.
func refused(err error, verb, what string) string {
	if bundle.IsNotHeld(err) {
		return "the input holds no " + what
	}
	return "the user may not " + verb + " " + what
}
