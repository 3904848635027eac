"""A small handbook of a made-up company, the documents the generation tests write questions from."""

from __future__ import annotations

LEAVE = """# Leave

Every employee has 27 days of paid leave a year, counted from January to December. Days not taken
by the end of March of the following year are lost, unless a manager agreed in writing to carry
them over because of a project deadline.

Leave is booked in the HR portal at least two weeks ahead for absences longer than three days.
Shorter absences need only a message to the team lead the day before. Public holidays are not
counted as leave, and the office is closed between Christmas and New Year.

Parents receive 20 weeks of paid parental leave, which can be taken in up to four blocks before the
child turns two. A parent returning from parental leave may work four days a week for the first
three months at full pay.

Sick leave needs no booking. After three days of illness in a row, a doctor's note goes to HR. Long
illness is paid in full for six months and at 70 percent for the six months after that.
"""

EXPENSES = """# Expenses

Travel is booked through the travel desk, which compares fares and pays hotels directly. Economy
class is the rule for flights under six hours; longer flights may be booked in premium economy.
Trains are preferred for trips under four hours, and first class is allowed on them.

Meals on business trips are refunded up to 60 euros a day in Europe and 80 euros a day elsewhere.
Alcohol is not refunded, except at a dinner with a customer approved by a director.

Receipts are photographed in the expenses app within 30 days of the expense. Claims older than 90
days are refused. Refunds are paid with the next salary once the team lead has approved the claim.

The company card may be used for travel, software subscriptions under 500 euros a year and
conference fees. It may never be used for personal purchases, even when the money is paid back.
"""

SECURITY = """# Security

Laptops are encrypted with the company's disk encryption before they leave the IT desk, and the
screen locks after five minutes without use. A lost or stolen laptop is reported to the security
team within one hour, by phone on the emergency line, at any time of day.

Passwords are kept in the company password manager and are at least 16 characters long. Two-factor
authentication with a hardware key is required for e-mail, the code repositories and the HR portal.

Customer data never leaves the company's cloud accounts. Copies on laptops, USB sticks or personal
cloud storage are forbidden, and the data protection officer is told of any copy found within a day.

Visitors sign in at reception, wear a red badge and are accompanied at all times. Staff who travel
abroad take a loaner laptop with no customer data on it.
"""

ONBOARDING = """# Onboarding

A new employee's first day starts at 9:30 at reception, where the buddy assigned to them waits with
their laptop, badge and hardware key. The buddy is a colleague from another team who answers
questions during the first three months.

In the first week every new employee takes the security course and the data protection course
online; both end with a short test that must be passed before access to customer data is granted.

The team lead holds a meeting after 30 days and another after 90 days to agree on goals and to
hear what the new employee thinks of the onboarding. The probation period lasts six months, during
which either side may end the contract with two weeks' notice.
"""

#: The handbook as ``{content, doc_uri}`` dicts.
HANDBOOK = [
    {"content": LEAVE, "doc_uri": "handbook/leave.md"},
    {"content": EXPENSES, "doc_uri": "handbook/expenses.md"},
    {"content": SECURITY, "doc_uri": "handbook/security.md"},
    {"content": ONBOARDING, "doc_uri": "handbook/onboarding.md"},
]
