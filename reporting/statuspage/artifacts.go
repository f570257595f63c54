package statuspage

import (
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// artifactTypes are the only artifact files served, by extension, with the
// content type they are served as. Anything else under ArtifactsDir (the
// store, spools) stays private even when ArtifactsDir is the data dir.
var artifactTypes = map[string]string{
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".webp": "image/webp",
	".txt":  "text/plain; charset=utf-8",
	".log":  "text/plain; charset=utf-8",
	".json": "application/json",
	".har":  "application/json",
}

// cleanArtifact turns an artifact reference into a path inside ArtifactsDir,
// or "" when it is absolute, escapes the directory or has a type not served.
func cleanArtifact(a string) string {
	a = strings.TrimPrefix(a, "./")
	if a == "" || !fs.ValidPath(a) || strings.Contains(a, "\\") {
		return ""
	}
	if _, ok := artifactTypes[strings.ToLower(path.Ext(a))]; !ok {
		return ""
	}
	return a
}

// artifactRef maps a stored artifact reference to a path relative to
// ArtifactsDir. References are file names relative to the artifacts
// directory ("shop-eu-20250101T120000.000000000Z.png"). Verdicts stored by
// older versions carry the file's path instead (absolute, or relative to the
// working directory, e.g. "vigil-data/artifacts/NAME.png"): a path under
// ArtifactsDir maps to its part below it, and any other path whose directory
// is named "artifacts" to its base name.
func (p *Page) artifactRef(a string) string {
	if a == "" {
		return ""
	}
	c := filepath.Clean(a)
	for _, d := range p.artDirs {
		if filepath.IsAbs(c) != filepath.IsAbs(d) {
			continue
		}
		if rel, err := filepath.Rel(d, c); err == nil && rel != "." && rel != ".." &&
			!strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	s := strings.ReplaceAll(a, "\\", "/")
	if dir, base := path.Split(s); dir != "" && path.Base(path.Clean(dir)) == "artifacts" {
		return base
	}
	return a
}

// artifactURL is the link to artifact a, or "" when it cannot be served.
func (p *Page) artifactURL(a string) string {
	if p.arts == nil {
		return ""
	}
	c := cleanArtifact(p.artifactRef(a))
	if c == "" {
		return ""
	}
	return "/artifacts/" + (&url.URL{Path: c}).EscapedPath()
}

// serveArtifact serves GET /artifacts/{path...} from ArtifactsDir through an
// os.Root, so neither ".." nor a symbolic link can leave the directory.
func (p *Page) serveArtifact(w http.ResponseWriter, r *http.Request) {
	name := cleanArtifact(r.PathValue("path"))
	if p.arts == nil || name == "" {
		http.NotFound(w, r)
		return
	}
	f, err := p.arts.Open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", artifactTypes[strings.ToLower(path.Ext(name))])
	// An artifact is data, never a document that runs in the page's origin.
	h.Set("Content-Security-Policy", "default-src 'none'; img-src 'self'; sandbox")
	h.Set("Cache-Control", "private, max-age=3600")
	http.ServeContent(w, r, path.Base(name), st.ModTime(), rs)
}
