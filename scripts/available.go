package scripts

// Available reports why this browser cannot run, as a browser run would
// (an error wrapping ErrBrowserUnavailable): no Chromium at exec_path or on
// PATH. nil when a binary is there; whether it starts is known only when a
// run starts it.
func (b *Browser) Available() error {
	if b == nil {
		return ErrBrowserUnavailable
	}
	_, err := b.cfg.findExec()
	return err
}
