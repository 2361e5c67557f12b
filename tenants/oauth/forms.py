"""The consent form: the authorization request carried in hidden fields, the scopes the
person grants, and the API key that authorizes them."""

from __future__ import annotations

from django import forms
from django.conf import settings

from tenants.models import SCOPES

CARRIED = (
    "client_id",
    "redirect_uri",
    "response_type",
    "state",
    "code_challenge",
    "code_challenge_method",
    "scope",
    "resource",
)


def _scope_choices() -> list[tuple[str, str]]:
    described = settings.OAUTH2_PROVIDER["SCOPES"]
    return [(scope, f"{scope}: {described[scope]}") for scope in SCOPES]


class ConsentForm(forms.Form):
    client_id = forms.CharField(widget=forms.HiddenInput, max_length=100)
    redirect_uri = forms.CharField(widget=forms.HiddenInput, max_length=2000)
    response_type = forms.CharField(widget=forms.HiddenInput, max_length=20)
    state = forms.CharField(widget=forms.HiddenInput, required=False, max_length=2000)
    code_challenge = forms.CharField(widget=forms.HiddenInput, required=False, max_length=128)
    code_challenge_method = forms.CharField(widget=forms.HiddenInput, required=False, max_length=10)
    scope = forms.CharField(widget=forms.HiddenInput, required=False, max_length=200)
    resource = forms.CharField(widget=forms.HiddenInput, required=False, max_length=2000)
    granted = forms.MultipleChoiceField(
        choices=_scope_choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    api_key = forms.CharField(
        label="API key of the project",
        required=False,
        max_length=200,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "off", "placeholder": "mp_…"}),
    )

    def credentials(self) -> dict[str, str]:
        """The authorization request as oauthlib takes it back (the scopes go separately)."""
        data = self.cleaned_data
        names = ("client_id", "redirect_uri", "response_type", "state")
        names += ("code_challenge", "code_challenge_method")
        return {name: data[name] for name in names if data.get(name)}
