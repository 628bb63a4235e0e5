package web

// maxPageGzipBytes bounds the whole page as served compressed: the HTML,
// every module and the stylesheet, gzip'd. A phone on a poor link should
// have it in a second or two; the issue sets 300 KB.
const maxPageGzipBytes = 300 << 10
