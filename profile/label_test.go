package profile

import "testing"

func TestLabelFromIRI(t *testing.T) {
	tests := []struct{ iri, want string }{
		{"http://en.wikipedia.org/wiki/Semantic_Web", "semantic web"},
		{"https://en.wikipedia.org/wiki/Python_(programming_language)", "python"},
		{"http://dbpedia.org/resource/Semantic_Web", "semantic web"},
		{"http://dbpedia.org/resource/Caf%C3%A9_culture", "café culture"},
		{"http://example.org/topics#SemanticWeb", "semantic web"},
		{"http://example.org/topics/machineLearning/", "machine learning"},
		{"http://example.org/topics/XMLParsers.html", "xml parsers"},
		{"http://example.org/hobbies/rock-climbing/index.html", "rock climbing"},
		{"http://www.python.org/", "python"},
		{"http://news.bbc.co.uk", "bbc"},
		{"http://example.org/people/card#me", "card"},
		{"http://www.wikidata.org/entity/Q42", ""},
		{"http://example.org/t/5f2b9c0e7d1a", ""},
		{"urn:isbn:0451450523", ""},
		{"mailto:someone@example.org", ""},
		{"http://example.org/topics/HTML5", "html5"},
		{"http://example.org/", "example"},
		{"http://localhost:8080/", "localhost"},
		{"http://example.org/a/12345", ""},
	}
	for _, tt := range tests {
		if got := labelFromIRI(tt.iri); got != tt.want {
			t.Errorf("labelFromIRI(%q) = %q, want %q", tt.iri, got, tt.want)
		}
	}
}
