"""BurstBudget: an AWS Budgets cost budget on the burst tag, a second belt beside the burst windows' own arithmetic.

The burst pools' launch templates tag what they launch `gpufleet-burst=<cluster>` (model.conventions.BURST_TAG). A
monthly budget of `burst.budget_usd` filters the bill on that tag and emails `burst.alert_emails` at 80% and 100%
of actual spend and at 100% of forecast spend. They also get the alert topic of a failed backstop's alarm.

- It only alerts: `gpufleet burst` and the backstop keep the spend within the budget; this tells people when AWS's
  own bill says otherwise (a node outside any window, a price the catalog got wrong).
- A user-defined tag filters costs only once it is activated as a cost-allocation tag, in the management (payer)
  account (ACTIVATE_TAGS). Until then the budget sees $0.
- Free: a budget without actions costs $0.00 per budget-day (model/catalog/aws_prices.json, `aws-budget`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from model.conventions import BURST_TAG

# "User-defined tags ... must be activated before they can be used" for cost allocation; only the management
# account can activate them (AWS Billing user guide, activating-tags.html).
ACTIVATE_TAGS = "https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/activating-tags.html"
# (notification type, % of the budget): actual spend near and at the budget, and a forecast over it.
THRESHOLDS = (("ACTUAL", 80.0), ("ACTUAL", 100.0), ("FORECASTED", 100.0))
# The alert topic keeps SNS's default: no encryption at rest. A CloudWatch alarm cannot publish to a topic under the
# AWS managed key alias/aws/sns, whose key policy cannot grant it kms:GenerateDataKey
# (https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns). Its messages name an alarm, nothing secret.


def tag_filter(cluster: str) -> str:
    """The TagKeyValue cost filter of the burst tag: `user:<key>$<value>` (pulumi-aws aws.budgets.Budget docs,
    "cost filter using resource tags")."""
    return f"user:{BURST_TAG}${cluster}"


@dataclass(frozen=True)
class BurstBudgetArgs:
    cluster_name: str  # the burst site's EKS cluster: the tag's value
    budget_usd: float
    emails: list[str]
    tags: dict[str, str]


class BurstBudget(pulumi.ComponentResource):
    """Creates the monthly cost budget, and when anyone is to be told its notifications and the alert topic with
    one email subscription each (each address confirms it once)."""

    budget: aws.budgets.Budget
    topic: aws.sns.Topic | None  # the burst alert topic, when anyone is to be told

    def __init__(self, name: str, args: BurstBudgetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:BurstBudget", name, None, opts)
        self.topic = None
        if args.emails:
            self.topic = aws.sns.Topic(
                f"{name}-alerts", name=f"{args.cluster_name}-burst-alerts", tags=args.tags,
                opts=pulumi.ResourceOptions(parent=self),
            )  # fmt: skip
            for i, email in enumerate(args.emails):
                aws.sns.TopicSubscription(
                    f"{name}-alerts-{i}", topic=self.topic.arn, protocol="email", endpoint=email,
                    opts=pulumi.ResourceOptions(parent=self),
                )  # fmt: skip
        notifications = [
            aws.budgets.BudgetNotificationArgs(
                comparison_operator="GREATER_THAN",
                notification_type=kind,
                threshold=percent,
                threshold_type="PERCENTAGE",
                subscriber_email_addresses=args.emails,
            )
            for kind, percent in THRESHOLDS
            if args.emails
        ]
        self.budget = aws.budgets.Budget(
            f"{name}-budget",
            name=f"{args.cluster_name}-burst",  # unique within the account
            budget_type="COST",
            time_unit="MONTHLY",
            limit_amount=f"{args.budget_usd:.2f}",
            limit_unit="USD",
            cost_filters=[aws.budgets.BudgetCostFilterArgs(name="TagKeyValue", values=[tag_filter(args.cluster_name)])],
            notifications=notifications,
            tags=args.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
