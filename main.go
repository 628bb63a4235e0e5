// Command buzzbox is one executable that becomes the tool it is started as.
// See package dispatch for how the identity is chosen.
package main

import (
	"os"

	"buzzbox/dispatch"
)

func main() {
	os.Exit(dispatch.Main(os.Args))
}
