package console

import (
	"testing"

	"golang.org/x/text/language"

	"github.com/hookd/hookd/internal/delivery"
	"github.com/hookd/hookd/internal/event"
	"github.com/hookd/hookd/internal/profile"
)

// TestTypeDescriptions: hookd's own event types are described in the
// reader's language. The catalog's English is the code's description word
// for word (a changed description fails here until the catalog follows),
// the Chinese is another text, and a description the operator wrote
// instead is shown as written.
func TestTypeDescriptions(t *testing.T) {
	en, zh := localeByTag[language.English], localeByTag[language.SimplifiedChinese]
	var own []event.Type
	own = append(own, delivery.NotificationTypes...)
	own = append(own, profile.Standard{}.Catalog()...)
	own = append(own, profile.Kwork{}.Catalog()...)
	for _, ty := range own {
		if got := en.typeDescription(ty.Name, ty.Description); got != ty.Description {
			t.Errorf("%s in English: %q, want the code's %q", ty.Name, got, ty.Description)
		}
		zhText := zh.typeDescription(ty.Name, ty.Description)
		if zhText == ty.Description {
			t.Errorf("%s has no Chinese description (add type.%s to both catalogs, English word for word as in the code)", ty.Name, ty.Name)
		}
	}
	if got := zh.typeDescription("webhook.test", "Our own words."); got != "Our own words." {
		t.Errorf("an operator's description of webhook.test became %q", got)
	}
	if got := zh.typeDescription("invoice.paid", "An invoice was paid."); got != "An invoice was paid." {
		t.Errorf("a producer's type's description became %q", got)
	}
}
