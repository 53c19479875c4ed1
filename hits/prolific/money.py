"""What Prolific states about a batch's money: the currency it pays in, and the fees and VAT it charges.

Currency.  Prolific reads every amount the platform sends (a study's ``reward`` in minor units, a bulk bonus's
``csv_bonuses`` amounts) in the currency of the workspace the study is in: ``currency_code``, USD or GBP, on the
workspace (``GET /workspaces/{id}/``), its balance (``GET /workspaces/{id}/balance/``) and each study.  The
first publish of a batch reads it (``record_currency``) and records it on the batch (``Batch.currency``) once;
a later publish from a workspace in another currency is refused (a batch never mixes currencies), and a study
Prolific creates in another currency than the batch's is left unpublished with the reason.

Fees.  Prolific charges its service fee "+ VAT where applicable" and states what it charges: a bulk bonus's create
answer gives ``amount``, ``fees``, ``vat`` and ``total_amount`` (what leaves the balance); its study cost
calculator (``POST /study-cost-calculator/``, ``reward`` and ``total_available_places``) gives a study's
``total_cost`` with fees and VAT.  One place's quote (``place_charges``) is what one approved submission's reward
costs on top of the reward.  The ledger books these figures, and the reconcile reads them again; the batch's
``prolific_fee_rate`` only estimates (the cost preview, the budget cap, a fee pending until Prolific states it).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import transaction

from hits.markets.money import KNOWN
from hits.models import Batch
from hits.prolific.client import Prolific, ProlificError

MINOR = Decimal(100)
#: Starts the note on a study Prolific created in another currency than its batch's (never published).
MIXED = "CURRENCY"


class CurrencyRefused(Exception):
    """The workspace's currency is not the batch's, or one the platform does not know."""


def workspace_id(prolific: Prolific) -> str | None:
    """``PROLIFIC_WORKSPACE_ID``, else the token's current workspace (``GET /users/me/``)."""
    configured = getattr(settings, "PROLIFIC_WORKSPACE_ID", "")
    if configured:
        return configured
    me = prolific.get("/api/v1/users/me/") or {}
    return me.get("current_workspace_id") or me.get("workspace_id")


def workspace_currency(prolific: Prolific) -> str | None:
    """The workspace's ``currency_code`` (the workspace, else its balance, which documents it); None when
    Prolific states none."""
    workspace = workspace_id(prolific)
    if not workspace:
        return None
    code = (prolific.get(f"/api/v1/workspaces/{workspace}/") or {}).get("currency_code")
    if not code:
        code = (prolific.get(f"/api/v1/workspaces/{workspace}/balance/") or {}).get("currency_code")
    return str(code).upper() if code else None


def check_known(code: str, where: str) -> str:
    if code not in KNOWN:
        raise CurrencyRefused(f"{where} is in {code}: the platform pays in {' or '.join(KNOWN)} only")
    return code


def record_currency(batch: Batch, prolific: Prolific) -> str:
    """The batch's currency: recorded from the workspace's at its first publish; refused (``CurrencyRefused``)
    when the workspace's differs from the one the batch recorded.  A workspace stating no currency leaves the
    batch's as it is (the study's own ``currency_code`` is checked when it is created)."""
    code = workspace_currency(prolific)
    if code is None:
        return batch.currency
    check_known(code, "the Prolific workspace")
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        if locked.currency and locked.currency != code:
            raise CurrencyRefused(
                f"batch '{locked}' pays in {locked.currency}, but the Prolific workspace is in {code}: a campaign "
                f"never mixes currencies. Publish it from a {locked.currency} workspace (PROLIFIC_WORKSPACE_ID or "
                "the token's), or run a new campaign in this one.")
        if not locked.currency:
            Batch.objects.filter(pk=batch.pk).update(currency=code)
    batch.currency = code
    return code


def study_currency_problem(batch: Batch, answer: dict) -> str:
    """Why a study Prolific created cannot be used ("" when it can): its ``currency_code`` is not the batch's."""
    code = str((answer or {}).get("currency_code") or "").upper()
    if not code or not batch.currency or code == batch.currency:
        return ""
    return (f"{MIXED}: Prolific created the study in {code}, but the batch pays in {batch.currency}: not published "
            "(a campaign never mixes currencies)")


def place_charges(prolific: Prolific, reward: Decimal) -> tuple[Decimal, Decimal | None]:
    """(fees with VAT, VAT or None) Prolific's cost calculator states for one place at ``reward``."""
    minor = int(Decimal(reward) * MINOR)
    answer = prolific.request("POST", "/api/v1/study-cost-calculator/", safe=True,
                              json={"reward": minor, "total_available_places": 1}) or {}
    if answer.get("total_cost") is None:
        raise ProlificError(f"Prolific's cost calculator stated no total_cost for a reward of {minor}: {answer}")
    fee = (Decimal(str(answer["total_cost"])) - minor) / MINOR
    vat = answer.get("vat")
    return fee.quantize(Decimal("0.01")), None if vat is None else (Decimal(str(vat)) / MINOR).quantize(Decimal("0.01"))


def bonus_charges(answer: dict) -> tuple[Decimal | None, Decimal | None]:
    """(fees with VAT, VAT) a bulk bonus's create answer states (minor units -> amounts): ``total_amount`` -
    ``amount`` when both are given, else ``fees`` + ``vat``; (None, None) when it states neither."""
    def amount(name):
        value = answer.get(name)
        return None if value is None else Decimal(str(value)) / MINOR

    total, paid, fees, vat = amount("total_amount"), amount("amount"), amount("fees"), amount("vat")
    if total is not None and paid is not None:
        charged = total - paid
    elif fees is not None:
        charged = fees + (vat or 0)
    else:
        return None, vat
    return charged.quantize(Decimal("0.01")), vat


def planned_currency(batch: Batch | None, prolific: Prolific | None = None) -> str:
    """The currency a publish of ``batch`` (None: not made yet) would use, changing nothing: the batch's when
    recorded, else the workspace's when Prolific can be asked (``prolific``, or a token is set), else the default."""
    from hits.markets.money import currency_of

    if batch is not None and batch.currency:
        return batch.currency
    if prolific is None and not settings.PROLIFIC_API_TOKEN:
        return currency_of(batch)
    try:
        if prolific is not None:
            code = workspace_currency(prolific)
        else:
            with Prolific() as own:
                code = workspace_currency(own)
    except ProlificError:
        code = None
    return code or currency_of(batch)
