// Package shimtools groups the tools the session shim puts on an agent's PATH:
// rg (ripgrep 13 compatible search), tree (GNU tree 2.1 compatible listing)
// and the shim directory itself. The code lives in subpackages split by job,
// as ripgrep splits its crates: glob, ignore, walk, rustregex, search,
// printer, rg, tree, passthru and shim. This package holds nothing but this comment.
package shimtools
