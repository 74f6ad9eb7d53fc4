"""The example shop's tasks (docs/django.md), run by ``manage.py taskforge_worker``."""

from asgiref.sync import sync_to_async
from django.db import connection
from django.tasks import task

from .models import Order


class PaymentDeclined(Exception):
    """The card was refused."""


@task
def ship_order(order_id):
    order = Order.objects.get(pk=order_id)
    order.shipped = True
    order.save(update_fields=["shipped"])
    return {"order_id": order.pk, "item": order.item, "shipped": True}


@task
def send_gift_note(order_id, note):
    return {"order_id": order_id, "note": note}


@task(queue_name="reports", priority=-10)
async def order_report(order_ids):
    shipped = await Order.objects.filter(pk__in=order_ids, shipped=True).acount()
    return {"orders": len(order_ids), "shipped": shipped}


@task
def charge_card(order_id, amount):
    if amount <= 0:
        raise PaymentDeclined(f"order {order_id}: amount {amount} refused")
    return {"order_id": order_id, "charged": amount}


@task
def export_order(order_id):
    return Order.objects.get(pk=order_id)  # a model instance is not JSON: the attempt fails


@task(takes_context=True)
def audit_order(context, order_id):
    return {"order_id": order_id, "result_id": context.task_result.id, "attempt": context.attempt}


@task
def database_session():
    """The server process id of the connection Django gave this task."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@task
async def async_database_session():
    return await sync_to_async(database_session.func)()
