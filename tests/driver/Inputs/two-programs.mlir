mtf.program @a {
}
mtf.program @b {
}
