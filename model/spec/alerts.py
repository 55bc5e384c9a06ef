"""Where a site's alerts go (`kubernetes.monitoring.alerts`): one Alertmanager receiver, a webhook and/or Slack and
PagerDuty. The stack file holds no secret value: a Slack webhook URL, a PagerDuty routing key or a webhook URL
with a token in it stays in a Kubernetes Secret of the `monitoring` namespace, which the Alertmanager mounts and
reads as a file (Alertmanager's `*_file` settings)."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from model.spec.base import Model

# A Secret's name (a DNS subdomain) and a key of its data
# (https://kubernetes.io/docs/concepts/configuration/secret/#restriction-names-data).
SECRET_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
SECRET_KEY = r"^[-._a-zA-Z0-9]+$"


class SecretKey(Model):
    """One key of a Secret in the `monitoring` namespace, made before `gpufleet up` (the Alertmanager does not start
    without it)."""

    secret: str = Field(pattern=SECRET_NAME, max_length=253, description="The Secret's name.")
    key: str = Field(pattern=SECRET_KEY, max_length=253, description="The key of its data holding the value.")


class SlackReceiver(SecretKey):
    """Slack: the Secret key holds the incoming webhook's URL."""

    channel: str | None = Field(
        default=None, max_length=100, description="The channel to post to; unset, the webhook's own channel."
    )


class AlertReceiver(Model):
    """The Alertmanager receiver every gpufleet and chart alert goes to (the chart's always-firing Watchdog excepted)."""

    webhook_url: str | None = Field(
        default=None,
        max_length=2048,
        description="An http(s) URL that carries no secret (e.g. an in-cluster relay); alerts are POSTed to it as JSON.",
    )
    webhook_url_secret: SecretKey | None = Field(
        default=None, description="A webhook URL that carries a token, read from a Secret instead of webhook_url."
    )
    slack: SlackReceiver | None = None
    pagerduty: SecretKey | None = Field(
        default=None, description="PagerDuty Events API v2: the Secret key holds the integration's routing key."
    )

    @field_validator("webhook_url")
    @classmethod
    def _no_secret_in_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("webhook_url must be an http or https URL with a host")
        if parts.username is not None or parts.password is not None:
            raise ValueError("webhook_url must carry no user or password: use webhook_url_secret")
        return url

    @model_validator(mode="after")
    def _one_receiver_at_least(self) -> AlertReceiver:
        if self.webhook_url is not None and self.webhook_url_secret is not None:
            raise ValueError("give one of webhook_url and webhook_url_secret")
        if not any((self.webhook_url, self.webhook_url_secret, self.slack, self.pagerduty)):
            raise ValueError("name at least one of webhook_url, webhook_url_secret, slack, pagerduty")
        return self

    def secrets(self) -> list[str]:
        """The Secrets the Alertmanager must mount."""
        refs = (self.webhook_url_secret, self.slack, self.pagerduty)
        return sorted({r.secret for r in refs if r is not None})
