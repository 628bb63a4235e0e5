package nipoa

// maxTagBytes caps the JSON text of an auth tag, as the spec does: a valid
// tag is under 300 bytes.
const maxTagBytes = 1024
