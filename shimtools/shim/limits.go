package shim

// maxNameRunes bounds the display name used as git's user.name.
const maxNameRunes = 80
