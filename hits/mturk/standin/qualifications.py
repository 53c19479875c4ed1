"""The MTurk stand-in's qualifications: requirements and scores, qualification types, worker blocks and
NotifyWorkers.

A mixin of ``hits.mturk.standin.StandIn`` (which builds on it; see its docstring for what the
stand-in models); it works on the instance's ``state``, ``lock`` and ``clock``.
"""

from __future__ import annotations


from hits.mturk.standin.common import (
    ADULT,
    ALREADY_EXISTS,
    APPROVED,
    COMPARATORS,
    GUARDS,
    LOCALE,
    NUMBER_APPROVED,
    PERCENT_APPROVED,
    REJECTED,
    Refused,
    SYSTEM_TYPES,
    WorkerRefused,
    integer,
    millis,
    new_id,
    text,
    valid_worker_id,
)


class QualificationsMixin:
    """Qualification requirements, types and scores, blocks and notifications."""

    # -- qualifications

    def _score(self, type_id: str, worker_id: str) -> dict | None:
        """The worker's granted value of a qualification type (system types have defaults), or None."""
        held = self.state["qualifications"].get(type_id, {}).get(worker_id)
        if held is not None:
            return held if held["Status"] == "Granted" else None
        if type_id == LOCALE:
            return {"LocaleValue": {"Country": "US"}}
        if type_id == PERCENT_APPROVED:
            return {"IntegerValue": 100}
        if type_id == ADULT:
            return {"IntegerValue": 1}
        if type_id == NUMBER_APPROVED:
            approved = sum(
                1 for a in self.state["assignments"].values() if a["WorkerId"] == worker_id and a["status"] == APPROVED
            )
            return {"IntegerValue": approved}
        return None

    @staticmethod
    def _meets(requirement: dict, held: dict | None) -> bool:
        comparator = requirement["Comparator"]
        if comparator == "Exists":
            return held is not None
        if comparator == "DoesNotExist":
            return held is None
        if held is None:
            return False
        if requirement.get("LocaleValues"):
            locale = held.get("LocaleValue")
            if locale is None:
                return False
            match = any(
                wanted.get("Country") == locale.get("Country")
                and (not wanted.get("Subdivision") or wanted.get("Subdivision") == locale.get("Subdivision"))
                for wanted in requirement["LocaleValues"]
            )
            return match if comparator in ("EqualTo", "In") else not match if comparator in ("NotEqualTo", "NotIn") else False
        value, values = held.get("IntegerValue"), requirement.get("IntegerValues") or []
        if value is None or not values:
            return False
        if comparator == "In":
            return value in values
        if comparator == "NotIn":
            return value not in values
        target = values[0]
        return {
            "LessThan": value < target,
            "LessThanOrEqualTo": value <= target,
            "GreaterThan": value > target,
            "GreaterThanOrEqualTo": value >= target,
            "EqualTo": value == target,
            "NotEqualTo": value != target,
        }[comparator]

    def _unmet(self, hit: dict, worker_id: str, action: str) -> dict | None:
        """The first requirement of the HIT the worker does not meet and that guards ``action``, if any."""
        for requirement in hit["QualificationRequirements"]:
            guarded = requirement.get("ActionsGuarded") or ("PreviewAndAccept" if requirement.get("RequiredToPreview") else "Accept")
            if action == "preview" and guarded == "Accept":
                continue
            if action == "discover" and guarded != "DiscoverPreviewAndAccept":
                continue
            if not self._meets(requirement, self._score(requirement["QualificationTypeId"], worker_id)):
                return requirement
        return None

    def _requirements(self, requirements) -> list[dict]:
        if requirements is None:
            return []
        if not isinstance(requirements, list) or len(requirements) > 10:
            raise Refused("QualificationRequirements must be a list of at most 10 requirements")
        checked = []
        for requirement in requirements:
            type_id, comparator = requirement.get("QualificationTypeId"), requirement.get("Comparator")
            if type_id not in SYSTEM_TYPES and type_id not in self.state["qualification_types"]:
                raise Refused(f"QualificationType {type_id} does not exist.")
            if comparator not in COMPARATORS:
                raise Refused(f"Comparator {comparator!r} is not one of {sorted(COMPARATORS)}")
            values = (requirement.get("IntegerValues") or []) + (requirement.get("LocaleValues") or [])
            if comparator in ("Exists", "DoesNotExist") and values:
                raise Refused(f"A requirement with Comparator {comparator} takes no IntegerValues or LocaleValues")
            if comparator not in ("Exists", "DoesNotExist") and not values:
                raise Refused(f"A requirement with Comparator {comparator} needs IntegerValues or LocaleValues")
            if comparator not in ("In", "NotIn", "Exists", "DoesNotExist") and len(values) != 1:
                raise Refused(f"A requirement with Comparator {comparator} takes exactly one value")
            if requirement.get("ActionsGuarded") is not None and requirement["ActionsGuarded"] not in GUARDS:
                raise Refused(f"ActionsGuarded must be one of {sorted(GUARDS)}")
            checked.append(dict(requirement))
        return checked

    # qualification types, scores and blocks

    def _qualification_type(self, type_id) -> dict:
        found = self.state["qualification_types"].get(type_id) if isinstance(type_id, str) else None
        if found is None:
            raise Refused(f"QualificationType {type_id} does not exist.")
        return found

    @staticmethod
    def _worker_id(params: dict) -> str:
        return valid_worker_id(params.get("WorkerId"))

    def _op_CreateQualificationType(self, params, now, request_id):
        name = text(params, "Name", 200, required=True)
        if any(t["Name"] == name for t in self.state["qualification_types"].values()):
            raise Refused(
                "You have already created a QualificationType with this name. A QualificationType's name must be unique "
                f"among all of the QualificationTypes created by the same user. ({millis(now)})",
                ALREADY_EXISTS,
            )
        status = params["QualificationTypeStatus"]
        if status not in ("Active", "Inactive"):
            raise Refused("QualificationTypeStatus must be Active or Inactive")
        type_id = new_id()
        created = {
            "QualificationTypeId": type_id,
            "CreationTime": now,
            "Name": name,
            "Description": text(params, "Description", 2000, required=True),
            "Keywords": text(params, "Keywords", 1000),
            "QualificationTypeStatus": status,
            "IsRequestable": True,
            "AutoGranted": bool(params.get("AutoGranted", False)),
        }
        for optional in ("RetryDelayInSeconds", "Test", "AnswerKey", "TestDurationInSeconds", "AutoGrantedValue"):
            if params.get(optional) is not None:
                created[optional] = params[optional]
        self.state["qualification_types"][type_id] = created
        self._changed()
        return {"QualificationType": created}

    def _op_GetQualificationType(self, params, now, request_id):
        return {"QualificationType": self._qualification_type(params["QualificationTypeId"])}

    def _op_ListQualificationTypes(self, params, now, request_id):
        query = (params.get("Query") or "").lower()
        types = [
            t for t in self.state["qualification_types"].values()
            if query in f"{t['Name']} {t['Description']} {t['Keywords']}".lower()
            and (not params["MustBeRequestable"] or t["IsRequestable"])
        ]
        return self._page(types, lambda t: (t["CreationTime"], t["QualificationTypeId"]), params, "QualificationTypes", dict)

    def _op_AssociateQualificationWithWorker(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        worker_id = self._worker_id(params)
        value = integer(params, "IntegerValue", 1)
        self.state["qualifications"].setdefault(type_id, {})[worker_id] = {
            "QualificationTypeId": type_id,
            "WorkerId": worker_id,
            "GrantTime": now,
            "IntegerValue": value,
            "Status": "Granted",
            "SendNotification": bool(params.get("SendNotification", False)),
        }
        self._changed()
        return {}

    def _op_DisassociateQualificationFromWorker(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        worker_id = self._worker_id(params)
        held = self.state["qualifications"].get(type_id, {}).get(worker_id)
        if held is not None:
            held.update(Status="Revoked", RevokeTime=now, Reason=params.get("Reason", ""))
            self._changed()
        return {}

    def _op_GetQualificationScore(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        held = self.state["qualifications"].get(type_id, {}).get(self._worker_id(params))
        if held is None:
            raise Refused(
                f"You requested a Qualification that does not exist: worker {params['WorkerId']}, type {type_id}.")
        return {"Qualification": self._qualification_view(held)}

    @staticmethod
    def _qualification_view(held: dict) -> dict:
        return {k: held[k] for k in ("QualificationTypeId", "WorkerId", "GrantTime", "IntegerValue", "Status") if k in held}

    def _op_ListWorkersWithQualificationType(self, params, now, request_id):
        type_id = self._qualification_type(params["QualificationTypeId"])["QualificationTypeId"]
        wanted = params.get("Status")
        held = [q for q in self.state["qualifications"].get(type_id, {}).values() if wanted in (None, q["Status"])]
        return self._page(held, lambda q: (q["WorkerId"],), params, "Qualifications", self._qualification_view)

    def _op_CreateWorkerBlock(self, params, now, request_id):
        worker_id = self._worker_id(params)
        self.state["blocks"][worker_id] = text(params, "Reason", 1024, required=True)
        self._changed()
        return {}

    def _op_DeleteWorkerBlock(self, params, now, request_id):
        worker_id = self._worker_id(params)
        if self.state["blocks"].pop(worker_id, None) is not None:
            self._changed()
        return {}

    def _op_ListWorkerBlocks(self, params, now, request_id):
        blocks = [{"WorkerId": w, "Reason": r} for w, r in self.state["blocks"].items()]
        return self._page(blocks, lambda b: (b["WorkerId"],), params, "WorkerBlocks", dict)

    def _op_NotifyWorkers(self, params, now, request_id):
        subject = text(params, "Subject", 200, required=True, plain=True)
        message = text(params, "MessageText", 4096, required=True, plain=True)
        worker_ids = params["WorkerIds"]
        if not isinstance(worker_ids, list) or not 1 <= len(worker_ids) <= 100:
            raise Refused("WorkerIds must list 1 to 100 worker ids")
        for position, value in enumerate(worker_ids):  # a malformed id refuses the whole call (the API's pattern)
            valid_worker_id(value, f"WorkerIds[{position}]")
        reviewed = {a["WorkerId"] for a in self.state["assignments"].values() if a["status"] in (APPROVED, REJECTED)}
        failures, delivered = [], []
        for worker_id in worker_ids:
            if worker_id in self.state["blocks"]:
                reason = "You have blocked this Worker; they cannot be notified."
            elif worker_id not in reviewed:
                reason = "You can only notify Workers whose work you have approved or rejected."
            else:
                delivered.append(worker_id)
                continue
            failures.append(
                {"NotifyWorkersFailureCode": "HardFailure", "NotifyWorkersFailureMessage": reason, "WorkerId": worker_id}
            )
        self.state["notifications"].append(
            {"at": now, "Subject": subject, "MessageText": message, "delivered": delivered, "failed": failures}
        )
        self._changed()
        return {"NotifyWorkersFailureStatuses": failures}

    def set_worker_score(self, worker_id: str, type_id: str, integer_value=None, locale=None) -> dict:
        """Give a simulated worker a qualification value (a system one such as Locale, or a type of this account)."""
        with self._session() as now:
            self._simulated_worker(worker_id)
            if type_id not in SYSTEM_TYPES and type_id not in self.state["qualification_types"]:
                raise WorkerRefused(f"qualification type {type_id} does not exist", 404, "unknown")
            score = {"QualificationTypeId": type_id, "WorkerId": worker_id, "GrantTime": now, "Status": "Granted"}
            if locale is not None:
                score["LocaleValue"] = locale if isinstance(locale, dict) else {"Country": str(locale)}
            else:
                score["IntegerValue"] = int(integer_value if integer_value is not None else 1)
            self.state["qualifications"].setdefault(type_id, {})[worker_id] = score
            self._changed()
            return score
