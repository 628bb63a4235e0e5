// Command buzzbox is one executable that becomes the tool it is started as.
// See package dispatch for how the identity is chosen.
package main

import (
	"os"

	"buzzbox/dispatch"

	// First, so that it runs before the rest of package initialisation.
	_ "buzzbox/internal/prefault"
)

func main() {
	os.Exit(dispatch.Main(os.Args))
}
